import { connect, type Socket } from 'node:net';
import { MalformedReplyError } from '../errors/malformed-reply-error.ts';

/**
 * A lean HTTP/1.1 client for one thing: a POST whose reply is read whole, over keep-alive
 * connections to a plain-`http:` origin (a local or in-cluster model server). A request is one
 * socket write (head and body together) and the reply is parsed from the socket's own chunks: no
 * `ClientRequest`, agent, `IncomingMessage` or stream per call, which on loopback cost about twice
 * the rest of a call (measured in `bench:interception`). Replies may be content-length, chunked or
 * close-delimited; 1xx heads are skipped; `connection: close` and HTTP/1.0 replies close the
 * connection after the reply. What a call ends in is told to its {@link ReplySink}.
 */

/** A complete reply: status, lower-cased headers (repeated ones joined with `, `) and the body. */
export interface Http1Reply {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** Why a call failed at the transport: no reply, a cut reply, or one that is not HTTP/1.x. */
export type Http1Failure = { kind: 'connection'; message: string; cause?: unknown };

/** Receives the one outcome of a call. */
export interface ReplySink {
  reply(reply: Http1Reply): void;
  fail(failure: Http1Failure): void;
}

/** Options of an {@link Http1Pool}. */
export interface Http1PoolOptions {
  /** Most connections open at once; further calls wait for a free one (default 256). */
  maxSockets?: number;
  /**
   * A free connection idle longer than this is closed rather than reused (default 4000 ms, under
   * uvicorn's 5 s keep-alive, so a reused connection is not one the server is closing). A server's
   * `keep-alive: timeout=N` hint lowers it to N − 1 s.
   */
  idleMs?: number;
}

/** One call in flight: what to write and where its outcome goes. */
export class Http1Call {
  /** Set when the call is over (replied, failed or cancelled): nothing more is told to the sink. */
  done = false;
  connection: Http1Connection | null = null;
  constructor(
    readonly data: string,
    readonly sink: ReplySink,
  ) {}
}

const HEAD_END = Buffer.from('\r\n\r\n');
const CRLF = Buffer.from('\r\n');
/** Largest reply head accepted (Node's own limit is 16 KiB). */
const MAX_HEAD_BYTES = 64 * 1024;

/** Keep-alive connections to one `host:port`, reused last-in first-out. */
export class Http1Pool {
  private readonly free: Http1Connection[] = [];
  private readonly waiting: Http1Call[] = [];
  private open = 0;
  private readonly maxSockets: number;
  readonly idleMs: number;

  constructor(
    readonly host: string,
    readonly port: number,
    options: Http1PoolOptions = {},
  ) {
    this.maxSockets = options.maxSockets ?? 256;
    this.idleMs = options.idleMs ?? 4000;
  }

  /** Sends `call` on a free connection, a new one, or once one frees up. */
  send(call: Http1Call): void {
    const now = Date.now();
    let connection = this.free.pop();
    while (connection && now - connection.idleSince > connection.idleLimit) {
      connection.destroy();
      connection = this.free.pop();
    }
    if (connection) {
      connection.start(call);
      return;
    }
    if (this.open >= this.maxSockets) {
      this.waiting.push(call);
      return;
    }
    this.open++;
    new Http1Connection(this).start(call);
  }

  /** Cancels a call: out of the queue, or its connection closed (a half-read reply cannot be reused). */
  cancel(call: Http1Call): void {
    call.done = true;
    if (call.connection) {
      call.connection.destroy();
      return;
    }
    const index = this.waiting.indexOf(call);
    if (index !== -1) this.waiting.splice(index, 1);
  }

  /** A connection finished its call and may take another. */
  release(connection: Http1Connection): void {
    let next = this.waiting.shift();
    while (next?.done) next = this.waiting.shift();
    if (next) {
      connection.start(next);
      return;
    }
    connection.idleSince = Date.now();
    connection.socket.unref();
    this.free.push(connection);
  }

  /** A connection closed. */
  closed(connection: Http1Connection): void {
    this.open--;
    const index = this.free.lastIndexOf(connection);
    if (index !== -1) this.free.splice(index, 1);
    // A queued call takes the room this connection leaves.
    let next = this.waiting.shift();
    while (next?.done) next = this.waiting.shift();
    if (next) this.send(next);
  }
}

type ParseState = 'head' | 'length' | 'chunk-size' | 'chunk-data' | 'chunk-end' | 'trailers' | 'close';

/** One keep-alive connection and the parser of the reply it is reading. */
export class Http1Connection {
  readonly socket: Socket;
  idleSince = 0;
  idleLimit: number;
  private call: Http1Call | null = null;
  private closed = false;
  /** Bytes received; those from `offset` on are not consumed yet (no slice object per step). */
  private pending: Buffer | null = null;
  private offset = 0;
  private state: ParseState = 'head';
  private status = 0;
  private headers: Record<string, string> = {};
  private keepAlive = true;
  /** Bytes of body (or of the current chunk) still expected. */
  private remaining = 0;
  private body: Buffer[] = [];
  private bodyBytes = 0;
  /** Whether any byte of the current reply arrived (a connection closed before that is a "hang up"). */
  private started = false;

  constructor(private readonly pool: Http1Pool) {
    this.idleLimit = pool.idleMs;
    this.socket = connect({ host: pool.host, port: pool.port, noDelay: true, keepAlive: true, keepAliveInitialDelay: 1000 });
    this.socket.on('data', (chunk: Buffer) => this.onData(chunk));
    this.socket.on('error', (error) => this.onClose(error));
    this.socket.on('close', () => this.onClose(undefined));
  }

  start(call: Http1Call): void {
    if (call.done) {
      this.pool.release(this);
      return;
    }
    this.call = call;
    call.connection = this;
    this.socket.ref();
    this.socket.write(call.data);
  }

  destroy(): void {
    this.socket.destroy();
    this.onClose(undefined);
  }

  private onClose(error: Error | undefined): void {
    const call = this.call;
    if (call && !call.done) {
      if (this.state === 'close' && !error) this.finish();
      // Not sent again, even on a reused connection that closed before any byte of the reply:
      // the server may have read (and acted on) the request; the caller's retry policy decides.
      else
        this.failCall(
          this.started ? 'Connection error: reply body cut short' : `Connection error: ${error?.message ?? 'socket hang up'}`,
          error,
        );
    }
    if (this.closed) return;
    this.closed = true;
    this.socket.destroy();
    this.pool.closed(this);
  }

  private failCall(message: string, cause?: unknown): void {
    const call = this.call;
    this.call = null;
    if (!call || call.done) return;
    call.done = true;
    call.sink.fail(cause === undefined ? { kind: 'connection', message } : { kind: 'connection', message, cause });
  }

  private onData(chunk: Buffer): void {
    if (!this.call) {
      // Bytes nobody asked for (or after a cancelled call): the connection's state is unknown.
      this.destroy();
      return;
    }
    this.started = true;
    const rest = this.pending === null ? 0 : this.pending.length - this.offset;
    this.pending = rest > 0 ? Buffer.concat([(this.pending as Buffer).subarray(this.offset), chunk]) : chunk;
    this.offset = 0;
    try {
      this.parse();
    } catch (error) {
      this.failCall(`Connection error: ${(error as Error).message}`);
      this.destroy();
    }
  }

  /** Consumes `pending` as far as it goes. */
  private parse(): void {
    for (;;) {
      const data = this.pending;
      const at = this.offset;
      if (!data || (at === data.length && this.state !== 'length')) return;
      switch (this.state) {
        case 'head': {
          const end = data.indexOf(HEAD_END, at);
          if (end === -1) {
            if (data.length - at > MAX_HEAD_BYTES) throw new MalformedReplyError('reply head too large');
            return;
          }
          this.offset = end + 4;
          this.readHead(data.toString('latin1', at, end));
          break;
        }
        case 'length': {
          const take = Math.min(this.remaining, data.length - at);
          this.addBody(data, at, at + take);
          this.remaining -= take;
          this.offset = at + take;
          if (this.remaining > 0) return;
          this.finish();
          return;
        }
        case 'close':
          this.addBody(data, at, data.length);
          this.offset = data.length;
          return;
        default:
          if (!this.chunkStep(data, at)) return;
      }
    }
  }

  /** One step of a chunked body (`data` = the unconsumed bytes); false when it needs more bytes or the reply is done. */
  private chunkStep(data: Buffer, at: number): boolean {
    switch (this.state) {
      case 'chunk-size': {
        const end = data.indexOf(CRLF, at);
        if (end === -1) {
          if (data.length - at > 1024) throw new MalformedReplyError('chunk size line too long');
          return false;
        }
        const line = data.toString('latin1', at, end);
        const semicolon = line.indexOf(';');
        const digits = (semicolon === -1 ? line : line.slice(0, semicolon)).trim();
        if (!/^[0-9a-fA-F]{1,12}$/.test(digits)) throw new MalformedReplyError(`bad chunk size ${JSON.stringify(line)}`);
        const size = Number.parseInt(digits, 16);
        this.offset = end + 2;
        this.remaining = size;
        this.state = size === 0 ? 'trailers' : 'chunk-data';
        return true;
      }
      case 'chunk-data': {
        const take = Math.min(this.remaining, data.length - at);
        this.addBody(data, at, at + take);
        this.remaining -= take;
        this.offset = at + take;
        if (this.remaining === 0) this.state = 'chunk-end';
        return true;
      }
      case 'chunk-end':
        if (data.length - at < 2) return false;
        if (data[at] !== 13 || data[at + 1] !== 10) throw new MalformedReplyError('chunk not followed by CRLF');
        this.offset = at + 2;
        this.state = 'chunk-size';
        return true;
      default: {
        // Trailer lines, ended by an empty line; their content is not used.
        const end = data.indexOf(CRLF, at);
        if (end === -1) return false;
        this.offset = end + 2;
        if (end !== at) return true;
        this.finish();
        return false;
      }
    }
  }

  private readHead(head: string): void {
    const lineEnd = head.indexOf('\r\n');
    const statusLine = lineEnd === -1 ? head : head.slice(0, lineEnd);
    const match = /^HTTP\/1\.([01]) (\d{3})(?: |$)/.exec(statusLine);
    if (!match) throw new MalformedReplyError(`not an HTTP/1.x reply: ${JSON.stringify(statusLine.slice(0, 40))}`);
    const status = Number(match[2]);
    const headers: Record<string, string> = {};
    let start = lineEnd === -1 ? head.length : lineEnd + 2;
    while (start < head.length) {
      let end = head.indexOf('\r\n', start);
      if (end === -1) end = head.length;
      const colon = head.indexOf(':', start);
      if (colon === -1 || colon > end) throw new MalformedReplyError('malformed reply header line');
      const name = head.slice(start, colon).trim().toLowerCase();
      const value = head.slice(colon + 1, end).trim();
      const previous = headers[name];
      headers[name] = previous === undefined ? value : `${previous}, ${value}`;
      start = end + 2;
    }
    // 1xx heads (100 Continue, 103 Early Hints) precede the real one.
    if (status >= 100 && status < 200 && status !== 101) return;
    this.status = status;
    this.headers = headers;
    const connection = headers.connection?.toLowerCase();
    this.keepAlive = match[1] === '1' ? !connection?.includes('close') : Boolean(connection?.includes('keep-alive'));
    const hint = /timeout=(\d+)/i.exec(headers['keep-alive'] ?? '');
    if (hint) this.idleLimit = Math.min(this.pool.idleMs, Math.max(0, Number(hint[1]) * 1000 - 1000));
    const encoding = headers['transfer-encoding'];
    const length = headers['content-length'];
    if (status === 204 || status === 304) {
      this.state = 'length';
      this.remaining = 0;
    } else if (encoding !== undefined && /(?:^|,)\s*chunked\s*$/i.test(encoding)) {
      this.state = 'chunk-size';
    } else if (length !== undefined) {
      const size = Number(length);
      if (!/^\d+$/.test(length) || !Number.isSafeInteger(size))
        throw new MalformedReplyError(`bad content-length ${JSON.stringify(length)}`);
      this.state = 'length';
      this.remaining = size;
    } else {
      this.state = 'close';
      this.keepAlive = false;
    }
  }

  private addBody(data: Buffer, start: number, end: number): void {
    if (end <= start) return;
    this.body.push(start === 0 && end === data.length ? data : data.subarray(start, end));
    this.bodyBytes += end - start;
  }

  /** The reply is complete: tell the sink, then reuse or close the connection. */
  private finish(): void {
    const call = this.call;
    const body = this.body.length === 1 ? (this.body[0] as Buffer) : Buffer.concat(this.body, this.bodyBytes);
    const reply: Http1Reply = { status: this.status, headers: this.headers, body };
    const reusable = this.keepAlive && this.state !== 'close' && (this.pending === null || this.offset === this.pending.length);
    this.call = null;
    this.pending = null;
    this.offset = 0;
    this.state = 'head';
    this.body = [];
    this.bodyBytes = 0;
    this.started = false;
    if (call) call.connection = null;
    if (reusable && !this.closed) this.pool.release(this);
    else if (!this.closed) this.destroy();
    if (call && !call.done) {
      call.done = true;
      call.sink.reply(reply);
    }
  }
}
