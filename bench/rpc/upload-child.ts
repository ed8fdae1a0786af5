// One upload through our client in a process of its own, so its peak RSS is ours alone.
// usage: upload-child.ts URI POOL VOLUME FILE  -> {"seconds": S, "peakRssMiB": M}
import fs from 'node:fs';
import { LibvirtConnection } from '../../src/libvirt/connection.js';
import {
  StoragePoolLookupByName,
  StorageVolLookupByName,
  StorageVolUpload,
} from '../../src/libvirt/protocol.gen.js';
import { parseLibvirtUri } from '../../src/libvirt/uri.js';

const [uri, poolName, volName, file] = process.argv.slice(2) as [string, string, string, string];
const conn = await LibvirtConnection.connect(parseLibvirtUri(uri), { host: 'bench' });
const { pool } = await conn.call(StoragePoolLookupByName, { name: poolName });
const { vol } = await conn.call(StorageVolLookupByName, { pool, name: volName });
const t0 = performance.now();
await conn.upload(
  StorageVolUpload,
  { vol, offset: 0n, length: 0n, flags: 0 },
  fs.createReadStream(file, { highWaterMark: 1 << 20 }),
);
const seconds = (performance.now() - t0) / 1000;
await conn.close();
const hwm = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
console.log(JSON.stringify({ seconds, peakRssMiB: hwm ? Number(hwm[1]) / 1024 : NaN }));
