// An upstream application of kvm2: it installs the package and imports `kvm2/client` only.
// test/integration/client-package.test.ts installs the packed tarball into an application of
// its own, type-checks this file with `tsc --strict` and runs it against a real worker.
import { Kvm2Client, loadConfig, type ResultEntry } from 'kvm2/client';

const host = process.env['KVM2_HOST'] ?? 'local';
const image = process.env['KVM2_IMAGE'] ?? 'demo';
const name = process.env['KVM2_NAME'] ?? 'proxy-1';

const client = Kvm2Client.fromConfig(await loadConfig()); // KVM2_CONFIG, or the default
// This application's consumer group on the results stream, made before its first enqueue:
// every outcome from then on is delivered to one consumer of the group until acknowledged.
const results = await client.resultsReader({ group: 'my-app', consumer: 'app-1' });
try {
  const { jobId, id } = await client.create({
    host, // or zone: 'rack-a' (placed by the hosts' health)
    name,
    image, // an image of the configuration
    tag: 'proxies',
    userData: '#cloud-config\n',
  });
  const created = await client.waitFor(jobId, { timeoutMs: 5 * 60_000 });
  console.log(`create ${created.outcome}: ${created.state ?? '-'} ${created.address ?? '-'}`);

  // The same outcome as the group receives it: read, handle, acknowledge.
  let received: ResultEntry | undefined;
  while (received === undefined) {
    for (const result of await results.read({ blockMs: 5_000 })) {
      if (result.jobId === jobId && result.outcome !== 'retrying') received = result;
      await results.ack([result.streamId]);
    }
  }
  console.log(`group ${results.group}: ${received.op} ${received.outcome} ${received.streamId}`);

  const deleted = await client.waitFor((await client.delete(id)).jobId);
  console.log(`delete ${deleted.outcome}: ${deleted.state ?? '-'}`);
} finally {
  await results.close();
  await client.close();
}
