// One upload through our client in a process of its own (plain node on the compiled client,
// no TypeScript loader), so its peak RSS is ours alone.
// usage: node upload-child.mjs URI POOL VOLUME FILE  -> {"seconds": S, "peakRssMiB": M}
import fs from 'node:fs';
import { LibvirtConnection } from '../../dist/src/libvirt/connection.js';
import {
  StoragePoolLookupByName,
  StorageVolLookupByName,
  StorageVolUpload,
} from '../../dist/src/libvirt/protocol.gen.js';
import { parseLibvirtUri } from '../../dist/src/libvirt/transport/uri.js';

const [uri, poolName, volName, file] = process.argv.slice(2);
const conn = await LibvirtConnection.connect(parseLibvirtUri(uri), { host: 'bench' });
const { pool } = await conn.call(StoragePoolLookupByName, { name: poolName });
const { vol } = await conn.call(StorageVolLookupByName, { pool, name: volName });
const t0 = performance.now();
// 1 MiB reads by default (virsh reads 256 KiB at a time); READ_CHUNK=65536 mimics an HTTP body.
await conn.upload(
  StorageVolUpload,
  { vol, offset: 0n, length: 0n, flags: 0 },
  fs.createReadStream(file, { highWaterMark: Number(process.env.READ_CHUNK ?? 1 << 20) }),
);
const seconds = (performance.now() - t0) / 1000;
await conn.close();
const hwm = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
console.log(JSON.stringify({ seconds, peakRssMiB: hwm ? Number(hwm[1]) / 1024 : NaN }));
