// Types of corral-client (docs/clients.md).

export interface CorralOptions {
  /** http://HOST:PORT; default $CORRAL_URL, else http://127.0.0.1:8745 (a browser: the page's origin). A `?token=` is taken and dropped. */
  baseUrl?: string
  /** The bearer token; default $CORRAL_TOKEN. Sent only in the Authorization header. */
  token?: string
  /** The wait for an answer's headers, ms (default 60000). */
  timeoutMs?: number
  /** Retries of a 429 or 503 (default 3), each waiting Retry-After, at most maxRetryWaitMs (default 10000). */
  maxRetries?: number
  maxRetryWaitMs?: number
  fetch?: typeof fetch
  /** A WebSocket constructor for connect() (default the global one; the `ws` package on Node 20). */
  WebSocket?: any
}

export interface Limits {
  timeout?: number; cpu_time?: number; memory?: number | string; disk?: number | string
  output_limit?: number | string; pids?: number; nofile?: number; cpus?: number
  net?: 'none' | 'down'; env?: Record<string, string>
}

export interface CreateOptions {
  limits?: Limits; warm?: boolean; idleTimeout?: number; lifetime?: number
  metadata?: Record<string, unknown>; from?: string; signal?: AbortSignal
}

export interface SandboxInfo {
  id: string; state: 'running' | 'paused'; created_at: string; metadata: Record<string, unknown>
  limits: Record<string, unknown>; warm?: boolean; steps?: number; alive?: boolean; busy?: boolean
  expires_in_s?: number; expires_by?: string; paused_at?: string
}

export interface Figure { path: string; width: number; height: number; bytes: number; [k: string]: unknown }
export interface StepEvent {
  type: 'stdout' | 'stderr' | 'figure' | 'result' | 'error'; id?: string; data?: string
  figure?: Figure; result?: Record<string, unknown>; error?: {kind: string; message: string}
}

export interface RunOptions {
  language?: 'python' | 'bash'
  /** The step's wall time, seconds (the server's limit). */
  timeout?: number
  context?: string
  env?: Record<string, string>
  figurePng?: boolean
  /** Aborting a streamed step hangs up and interrupts it. */
  signal?: AbortSignal
  onStdout?: (text: string) => void
  onStderr?: (text: string) => void
  onFigure?: (figure: Figure) => void
  onResult?: (result: Execution) => void
  onError?: (error: CorralError) => void
  onEvent?: (event: StepEvent) => void
}

export class Execution {
  raw: Record<string, any>
  status: string
  stdout: string
  stderr: string
  value: {text?: string; type?: string; html?: string; markdown?: string; json?: unknown} | null
  text: string | null
  html: string | null
  markdown: string | null
  error: {name: string; value: string; traceback: string} | null
  figures: Figure[]
  exitCode: number | undefined
  stateLost: boolean
  readonly ok: boolean
}

export interface FileEntry { path: string; type: string; size: number; mode?: number; mtime?: number; target?: string }

export class Files {
  read(path: string, o?: {signal?: AbortSignal}): Promise<Uint8Array>
  readText(path: string, o?: {signal?: AbortSignal}): Promise<string>
  write(path: string, data: string | Uint8Array | ArrayBuffer | Blob, o?: {signal?: AbortSignal}): Promise<{path: string; size: number}>
  list(path?: string, o?: {depth?: number}): Promise<FileEntry[]>
  exists(path: string): Promise<boolean>
  remove(path: string): Promise<{removed: string}>
  uploadTar(tar: Uint8Array | ArrayBuffer | Blob, o?: {signal?: AbortSignal}): Promise<{entries: unknown; files: number; bytes: number}>
  downloadTar(o?: {signal?: AbortSignal}): Promise<Uint8Array>
}

export class Command {
  pid: number
  log: string
  status(): Promise<{pid: number; running: boolean; exit_code: number | null; log: string; log_bytes: number}>
  output(): Promise<string>
  kill(signal?: 'TERM' | 'KILL' | 'INT' | 'HUP' | 'QUIT' | 'USR1' | 'USR2' | 'STOP' | 'CONT'): Promise<{signalled: number; signal: string}>
  wait(o?: {timeoutMs?: number; intervalMs?: number}): Promise<number | null>
}

export class Commands {
  run(cmd: string, o?: {env?: Record<string, string>}): Promise<Command>
  get(pid: number): Command
}

export class SandboxSocket {
  runCode(code: string, opts?: RunOptions): Promise<Execution>
  runShell(cmd: string, opts?: RunOptions): Promise<Execution>
  interrupt(): void
  close(): void
}

export class Sandbox {
  id: string
  info: SandboxInfo
  files: Files
  commands: Commands
  runCode(code: string, opts?: RunOptions): Promise<Execution>
  runShell(cmd: string, opts?: RunOptions): Promise<Execution>
  interrupt(): Promise<{interrupted: boolean}>
  refresh(): Promise<SandboxInfo>
  pause(): Promise<SandboxInfo>
  resume(): Promise<SandboxInfo>
  kill(): Promise<{deleted: string}>
  connect(o?: {WebSocket?: any}): Promise<SandboxSocket>
}

export class Sandboxes {
  create(o?: CreateOptions): Promise<Sandbox>
  get(id: string): Promise<Sandbox>
  list(): Promise<Sandbox[]>
  kill(id: string): Promise<{deleted: string}>
  with<T>(o: CreateOptions, fn: (sb: Sandbox) => Promise<T>): Promise<T>
}

export interface RunEvent { id: number; type: string; [k: string]: unknown }
export interface RunInfo {
  id: string; status: string; task: string; model?: string; created?: string
  answer?: string | null; reason?: string | null; iterations?: number; usage?: Record<string, unknown>
  artifacts?: Array<Record<string, unknown>>; [k: string]: unknown
}
export interface RunCreateOptions {
  model?: string; baseUrl?: string; provider?: string
  /** sent as X-Model-Api-Key, never kept */
  apiKey?: string
  inputs?: Record<string, string | Uint8Array | ArrayBuffer | {sandbox: Sandbox | string; path?: string}>
  limits?: Limits; review?: string | Record<string, unknown>
  maxIterations?: number; tokenBudget?: number; wallBudget?: number; signal?: AbortSignal
  /** human approval before code runs (docs/modes.md): the run waits for answerApproval() */
  approve?: 'never' | 'risky' | 'always'; approveTimeout?: number; approveDefault?: 'deny' | 'approve'
}
export interface Approval {
  n: number; iteration: number; lang: 'python' | 'bash'; code: string
  review: {verdict?: string; findings?: Array<Record<string, unknown>>}
  timeout_s: number; default: 'deny' | 'approve'; waited_ms: number
}
export class Run {
  id: string
  info: RunInfo
  readonly status: string
  readonly done: boolean
  readonly answer?: string | null
  readonly usage?: Record<string, unknown>
  refresh(o?: {signal?: AbortSignal}): Promise<Run>
  cancel(): Promise<Run>
  /** The question the run waits on, or null. */
  pendingApproval(): Promise<Approval | null>
  /** Conflict when it was answered already, timed out, or the run has ended. */
  answerApproval(n: number, decision: 'approve' | 'deny' | 'edit', o?: {reason?: string; code?: string}):
    Promise<{n: number; status: 'answered'}>
  /** websocket: true (the client's or the global WebSocket) or a constructor: over a WebSocket instead of SSE. */
  events(o?: {after?: number; signal?: AbortSignal; maxReconnects?: number; websocket?: boolean | any}): AsyncGenerator<RunEvent>
  wait(o?: {onEvent?: (ev: RunEvent) => void; onStdout?: (s: string) => void; timeoutMs?: number; signal?: AbortSignal;
    websocket?: boolean | any}): Promise<Run>
  artifacts(): Promise<FileEntry[]>
  artifact(path: string): Promise<Uint8Array>
  archive(): Promise<Uint8Array>
}
export class Runs {
  create(task: string, o?: RunCreateOptions): Promise<Run>
  get(id: string): Promise<Run>
  /** Newest first: all of them (page by page), or at most limit after the run `after`. */
  list(o?: {limit?: number; after?: string}): Promise<Run[]>
}

export class Corral {
  constructor(o?: CorralOptions)
  baseUrl: string
  sandboxes: Sandboxes
  runs: Runs
  health(): Promise<{status: string}>
}
export default Corral

export class CorralError extends Error {
  status?: number; kind?: string; field?: string; retryAfter?: number
}
export class BadRequest extends CorralError {}
export class Unauthorized extends CorralError {}
export class Forbidden extends CorralError {}
export class NotFound extends CorralError {}
export class Conflict extends CorralError {}
export class PayloadTooLarge extends CorralError {}
export class RateLimited extends CorralError {}
export class ServerError extends CorralError {}
export class Unavailable extends ServerError {}
export class ConnectionFailed extends CorralError {}
export class TimeoutError extends CorralError {}
