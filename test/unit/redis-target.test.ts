// Which Redis a configuration names, and how messages name it: never with a password.
import { describe, expect, it } from 'vitest';
import { Cluster, Redis } from 'ioredis';
import { createProducerConnection, redisEndpoint, redisTarget } from '../../queues/redis.js';
import { parseConfig } from '../../src/provider/config/load.js';

const host = { name: 'h1', uri: 'test:///default', network: 'default' };
const configured = (redis: Record<string, unknown>) =>
  redisTarget(parseConfig({ hosts: [host], redis }).redis);

describe('redisTarget and redisEndpoint', () => {
  it('a URL: host and port, without its password', () => {
    const target = configured({ url: 'redis://:hunter2@10.0.0.5:6380/2' });
    expect(target).toBe('redis://:hunter2@10.0.0.5:6380/2');
    expect(redisEndpoint(target)).toBe('10.0.0.5:6380');
  });

  it('a Sentinel group: the master name and sentinels, without passwords', () => {
    const target = configured({
      sentinel: { name: 'm', nodes: ['10.0.0.5:26379', '[::1]:26380'], password: 'hunter2' },
    });
    expect(redisEndpoint(target)).toBe("sentinel master 'm' (10.0.0.5:26379, [::1]:26380)");
    expect(redisEndpoint(target)).not.toContain('hunter2');
  });

  it('a Cluster: its nodes, without the password, and a Cluster client', () => {
    const target = configured({
      cluster: { nodes: ['10.0.0.5:7000', '10.0.0.6:7000'], password: 'hunter2' },
    });
    expect(redisEndpoint(target)).toBe('redis cluster (10.0.0.5:7000, 10.0.0.6:7000)');
    const conn = createProducerConnection(target);
    try {
      expect(conn).toBeInstanceOf(Cluster);
      expect((conn as Cluster).options.redisOptions?.password).toBe('hunter2');
      expect((conn as Cluster).options.enableOfflineQueue).toBe(false);
      expect(conn.status).toBe('wait'); // lazy: nothing dialled
    } finally {
      conn.disconnect();
    }
    const plain = createProducerConnection(configured({}));
    expect(plain).toBeInstanceOf(Redis);
    plain.disconnect();
  });
});
