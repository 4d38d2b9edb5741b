import { StringDecoder } from 'node:string_decoder';

/**
 * One output stream of a program: keeps at most `limit` bytes (`truncated` turns true when more
 * came) and passes each chunk, decoded as UTF-8, to `onChunk` as it arrives. Local process groups
 * and container execs (`ExecOutputCollector`) collect their stdout and stderr with it.
 */
export class BoundedOutput {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  /** Whether bytes beyond `limit` arrived (and were dropped). */
  truncated = false;
  private readonly decoder = new StringDecoder('utf8');

  constructor(
    private readonly limit: number,
    private readonly onChunk?: (chunk: string) => void,
  ) {}

  /** Adds one chunk: to `onChunk` whole, to the kept bytes as far as `limit` allows. */
  push(chunk: Buffer): void {
    if (this.onChunk) {
      const text = this.decoder.write(chunk);
      if (text) this.onChunk(text);
    }
    const room = this.limit - this.size;
    if (room < chunk.length) this.truncated = true;
    if (room > 0) {
      const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
      this.chunks.push(kept);
      this.size += kept.length;
    }
  }

  /** The kept bytes. */
  bytes(): Buffer {
    return Buffer.concat(this.chunks, this.size);
  }

  /** The kept bytes as UTF-8, after passing a trailing incomplete character (as U+FFFD) to `onChunk`. */
  text(): string {
    if (this.onChunk) {
      const rest = this.decoder.end();
      if (rest) this.onChunk(rest);
    }
    return this.bytes().toString('utf8');
  }
}
