// The Bull Board dashboard (`kvm2 board`, SPEC §8): every kvm2 queue, user-data and
// network-config redacted, Basic auth as the config says (§2), optionally read-only.
//
// Layout: one Express app. The Host and Origin checks run first, then Basic auth, on every
// path, static files included; bull-board's own app is mounted at `/` and told the same base
// path (STACK-NOTES: they must match, or the UI asks for its assets and API in the wrong place).
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createBullBoard } from '@bull-board/api';
import { ExpressAdapter } from '@bull-board/express';
import express, { type ErrorRequestHandler } from 'express';
import type { Logger } from 'pino';
import { allQueueNames } from '../queues/names.js';
import {
  closeConnection,
  createWorkerConnection,
  redisEndpoint,
  redisTarget,
  withoutCommandArgs,
} from '../queues/redis.js';
import type { Kvm2Config } from '../src/provider/config/schema.js';
import { isLoopback, type ListenAddress } from '../src/provider/config/values.js';
import { Provider } from '../src/provider/provider.js';
import { createBoardQueues, type BoardQueues } from './adapters.js';
import { FleetView, fleetRouter } from './fleet.js';
import { basicAuth } from './auth.js';
import { requestGuard } from './request-guard.js';
import { apiPolicy } from './api-policy.js';
import { createLogger } from '../workers/logger.js';

/** Where bull-board is mounted, and so its base path. */
const BASE_PATH = '/';
/** How long close() lets in-flight requests finish before cutting their connections. */
const CLOSE_GRACE_MS = 2_000;

export interface BoardOptions {
  readonly logger?: Logger;
  /** Overrides config.board.listen (tests use port 0). */
  readonly listen?: { host: string; port: number };
  /**
   * Called with the URL once the server listens, before the board logs it: `kvm2 board` prints
   * it as the first line of standard output (docs/cli.md), where the log goes too.
   */
  readonly onListening?: (url: string) => void;
}

export interface BoardServer {
  /** `http://host:port/`, the port the server got. */
  readonly url: string;
  /** Stops listening, lets requests finish (briefly), closes the queues and Redis. */
  close(): Promise<void>;
}

/** The same rule the config applies to board.listen, for a listen address given in code. */
function checkExposure(config: Kvm2Config, listen: ListenAddress): void {
  if (config.board.auth === undefined && !isLoopback(listen.host)) {
    throw new TypeError(
      `board: listening on ${listen.host}:${listen.port} (beyond loopback) requires board.auth`,
    );
  }
}

/** Answers errors outside bull-board's router (a malformed JSON body…) without a stack trace. */
function errorResponder(logger: Logger): ErrorRequestHandler {
  return (err: unknown, _req, res, _next) => {
    const status = (err as { status?: unknown }).status;
    const code = typeof status === 'number' && status >= 400 && status < 600 ? status : 500;
    // A Redis error's command arguments (a password, job data) are not logged.
    if (code >= 500) logger.error({ err: withoutCommandArgs(err) }, 'board: request failed');
    res.status(code).json({ error: code === 500 ? 'internal error' : 'bad request' });
  };
}

function createApp(
  config: Kvm2Config,
  queues: BoardQueues,
  fleet: FleetView,
  logger: Logger,
): express.Express {
  const serverAdapter = new ExpressAdapter().setBasePath(BASE_PATH);
  createBullBoard({
    queues: queues.adapters,
    serverAdapter,
    options: {
      uiConfig: { boardTitle: 'kvm2' },
      handlerHooks: { before: apiPolicy({ readOnly: config.board.readOnly }) },
    },
  });
  const app = express();
  app.disable('x-powered-by');
  app.use(requestGuard({ allowedHosts: config.board.allowedHosts }));
  if (config.board.auth !== undefined) app.use(basicAuth(config.board.auth));
  // Before bull-board's router, which answers every path under its base.
  app.use(fleetRouter(fleet, config));
  app.use(BASE_PATH, serverAdapter.getRouter() as express.Router);
  app.use(errorResponder(logger));
  return app;
}

async function listen(app: express.Express, address: ListenAddress): Promise<Server> {
  const server = app.listen(address.port, address.host);
  await once(server, 'listening');
  return server;
}

function serverUrl(server: Server): string {
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  return `http://${host}:${port}/`;
}

/** Closes the server: idle keep-alive connections now, busy ones after a short grace. */
async function closeServer(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve, reject) =>
    server.close((err) => (err === undefined ? resolve() : reject(err))),
  );
  server.closeIdleConnections();
  const force = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
  try {
    await closed;
  } finally {
    clearTimeout(force);
  }
}

export async function startBoard(
  config: Kvm2Config,
  options: BoardOptions = {},
): Promise<BoardServer> {
  const logger = options.logger ?? createLogger({ name: 'kvm2-board' });
  const address = options.listen ?? config.board.listen;
  checkExposure(config, address);

  // One connection for every queue. Worker options (no retry limit, offline queue): a poll
  // during a Redis outage waits for the reconnect instead of failing the whole page.
  const redis = createWorkerConnection(redisTarget(config.redis));
  redis.on('error', (err: Error) => {
    // ioredis' messages name host:port, never the URL (which may carry a password).
    logger.warn(
      { redis: redisEndpoint(redisTarget(config.redis)), reason: err.message },
      'board: redis error',
    );
  });
  const names = allQueueNames(config.hosts);
  const queues = createBoardQueues(names, {
    connection: redis,
    prefix: config.redis.prefix,
    readOnly: config.board.readOnly,
  });

  // The fleet page lists each host's instances from libvirt (over SSH, like the workers).
  const provider = new Provider(config, { logger });
  const fleet = new FleetView({ config, redis, provider, queue: (name) => queues.queue(name) });

  let server: Server;
  try {
    server = await listen(createApp(config, queues, fleet, logger), address);
  } catch (err) {
    await queues.close();
    await provider.close();
    await closeConnection(redis);
    throw err;
  }
  const url = serverUrl(server);
  options.onListening?.(url);
  logger.info(
    { url, queues: names, readOnly: config.board.readOnly, auth: config.board.auth !== undefined },
    'board: listening',
  );

  let closing: Promise<void> | undefined;
  return {
    url,
    close() {
      closing ??= (async () => {
        try {
          await closeServer(server);
        } finally {
          await queues.close();
          await provider.close();
          await closeConnection(redis);
        }
      })();
      return closing;
    },
  };
}
