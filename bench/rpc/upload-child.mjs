// One upload through our client in a process of its own (plain node on the compiled client,
// no TypeScript loader), so its peak RSS is ours alone.
// usage: node upload-child.mjs URI POOL VOLUME FILE
//   -> {"seconds": S, "rssStartMiB": A, "rssLoadedMiB": L, "rssBeforeMiB": B, "peakRssMiB": M}
// RSS is read at each stage: node started (nothing of ours loaded), the client's modules
// loaded, the connection up and the volume found (just before the upload), and the peak.
import fs from 'node:fs';

const status = () => fs.readFileSync('/proc/self/status', 'utf8');
const rssMiB = () => Number(/VmRSS:\s+(\d+) kB/.exec(status())?.[1]) / 1024;
const rssStartMiB = rssMiB();
const { LibvirtConnection } = await import('../../dist/src/libvirt/connection.js');
const { StoragePoolLookupByName, StorageVolLookupByName, StorageVolUpload } =
  await import('../../dist/src/libvirt/protocol.gen.js');
const { parseLibvirtUri } = await import('../../dist/src/libvirt/transport/uri.js');
const rssLoadedMiB = rssMiB();

const [uri, poolName, volName, file] = process.argv.slice(2);
const conn = await LibvirtConnection.connect(parseLibvirtUri(uri), { host: 'bench' });
const { pool } = await conn.call(StoragePoolLookupByName, { name: poolName });
const { vol } = await conn.call(StorageVolLookupByName, { pool, name: volName });
const rssBeforeMiB = rssMiB();

/**
 * The file in 256 KiB reads into one buffer, as virsh reads it: read(2) on the thread that
 * sends, between sends (READ_CHUNK sets the size). READER=promises reads through fs.promises
 * instead, each read a trip to libuv's thread pool and back, which virsh does not make
 * (bench/rpc prints both: the client underneath is the same).
 */
async function* promisesChunks(size) {
  const handle = await fs.promises.open(file);
  const buffer = Buffer.allocUnsafe(size);
  try {
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, size);
      if (bytesRead === 0) return;
      yield buffer.subarray(0, bytesRead);
    }
  } finally {
    await handle.close();
  }
}

function* syncChunks(size) {
  const fd = fs.openSync(file);
  const buffer = Buffer.allocUnsafe(size);
  try {
    for (;;) {
      const bytesRead = fs.readSync(fd, buffer, 0, size);
      if (bytesRead === 0) return;
      yield buffer.subarray(0, bytesRead);
    }
  } finally {
    fs.closeSync(fd);
  }
}

const chunks = process.env.READER === 'promises' ? promisesChunks : syncChunks;

const t0 = performance.now();
await conn.upload(
  StorageVolUpload,
  { vol, offset: 0n, length: 0n, flags: 0 },
  chunks(Number(process.env.READ_CHUNK ?? 256 << 10)),
);
const seconds = (performance.now() - t0) / 1000;
await conn.close();
const hwm = /VmHWM:\s+(\d+) kB/.exec(status());
console.log(
  JSON.stringify({
    seconds,
    rssStartMiB,
    rssLoadedMiB,
    rssBeforeMiB,
    peakRssMiB: hwm ? Number(hwm[1]) / 1024 : NaN,
  }),
);
