import { createServer, connect } from 'node:net'
import type { Server, Socket } from 'node:net'

/**
 * A TCP proxy in front of PostgreSQL that can lose one reply on purpose: once armed, the
 * first connection whose client sends a query containing `marker` has the server's answer
 * to it swallowed and both sockets destroyed. The server has already committed by then;
 * the client only sees a dropped connection.
 */
export class ReplyDroppingProxy {
  private server: Server | undefined
  private armedMarker: string | undefined
  /** How many replies were dropped. */
  dropped = 0
  port = 0
  private readonly sockets = new Set<Socket>()
  private readonly targetPort: number

  constructor(targetPort: number) {
    this.targetPort = targetPort
  }

  async start(): Promise<void> {
    this.server = createServer((client) => this.accept(client))
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve))
    const address = this.server.address()
    this.port = typeof address === 'object' && address !== null ? address.port : 0
  }

  /** Drop the reply to the next query containing `marker` (one shot). */
  arm(marker: string): void {
    this.armedMarker = marker
  }

  private accept(client: Socket): void {
    const server = connect(this.targetPort, '127.0.0.1')
    this.sockets.add(client)
    this.sockets.add(server)
    let dropping = false
    const destroyBoth = (): void => {
      client.destroy()
      server.destroy()
    }
    client.on('data', (chunk: Buffer) => {
      const marker = this.armedMarker
      if (marker !== undefined && chunk.includes(marker)) {
        this.armedMarker = undefined
        dropping = true
      }
      server.write(chunk)
    })
    server.on('data', (chunk: Buffer) => {
      if (dropping) {
        this.dropped++
        destroyBoth()
        return
      }
      client.write(chunk)
    })
    client.on('error', destroyBoth)
    server.on('error', destroyBoth)
    client.on('close', () => server.end())
    server.on('close', () => client.destroy())
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy()
    await new Promise<void>((resolve) =>
      this.server === undefined ? resolve() : this.server.close(() => resolve()),
    )
  }
}
