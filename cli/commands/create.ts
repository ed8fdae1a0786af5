// kvm2 create: syntax and help; actions/create.ts runs it.
import { defineCommand } from '../options/command.js';
import { waitOptions } from './wait-options.js';

export const createCommand = defineCommand({
  name: 'create',
  usage: 'create (--host H | --zone Z) --name N --image I [options]',
  summary: 'enqueue a create job for an instance <host>/<name>',
  description: [
    'Prints the job id, the instance id and its uid (--json: {jobId, id, uid, generation}).',
    'With --wait, waits for the final result (progress on a terminal) and exits 0 only when it',
    'succeeded; with --wait --json, prints only the final result entry. --timeout DURATION',
    '(30s, 10m, 2h, 1d) gives up waiting, status 124; the job carries on.',
    'FILE - reads standard input (for one of the two file options). The user-data and',
    'network-config are never printed.',
  ],
  json: true,
  options: {
    host: { type: 'string', value: 'H', description: 'the host to create on (or --zone)' },
    zone: {
      type: 'string',
      value: 'Z',
      description: 'a zone: the healthy host of it with the most free pool space (or --host)',
    },
    name: {
      type: 'string',
      value: 'N',
      description: 'instance name, a DNS label (required); the domain name on the host',
    },
    image: {
      type: 'string',
      value: 'I',
      description: 'an image from the configuration (required)',
    },
    tag: { type: 'string', value: 'T', description: 'tag for list and gc (default: none)' },
    'user-data': {
      type: 'string',
      value: 'FILE',
      description: 'cloud-init user-data file (-: standard input)',
    },
    'network-config': {
      type: 'string',
      value: 'FILE',
      description: 'cloud-init network-config file (-: standard input)',
    },
    vcpus: { type: 'string', value: 'N', description: 'virtual CPUs (default: defaults.vcpus)' },
    'memory-mib': {
      type: 'string',
      value: 'N',
      description: 'memory in MiB (default: defaults.memoryMiB)',
    },
    'disk-gib': {
      type: 'string',
      value: 'N',
      description: 'disk size in GiB (default: defaults.diskGiB)',
    },
    'no-wait-address': {
      type: 'boolean',
      description: "the job succeeds once the domain runs, without waiting for the guest's address",
    },
    ...waitOptions,
  },
  load: () => import('../actions/create.js'),
});
