// Logging of the job layer: graphile-worker's messages and ours, through one function, filtered
// by LOG_LEVEL. graphile-worker logs every completed job at `info`: that is our `debug`.
import { Logger } from "graphile-worker";

export type JobLogLevel = "error" | "warn" | "info" | "debug" | "trace";
export type JobLog = (level: JobLogLevel, message: string) => void;

const RANK: Record<JobLogLevel | "fatal" | "silent", number> = {
  trace: 10,
  debug: 20,
  info: 30,
  warn: 40,
  error: 50,
  fatal: 60,
  silent: 100,
};

/** Writes `tidings: jobs: …` lines for messages at or above `threshold` (LOG_LEVEL; `silent`: none). */
export function levelLog(threshold: keyof typeof RANK, write: (line: string) => void = (line) => process.stderr.write(line)): JobLog {
  const min = RANK[threshold];
  return (level, message) => {
    if (RANK[level] >= min) write(`tidings: jobs: ${message}\n`);
  };
}

const FROM_GRAPHILE: Record<string, JobLogLevel> = { error: "error", warning: "warn", info: "debug", debug: "trace" };

/** graphile-worker's Logger, writing to `log` (it would write to the console otherwise). */
export function graphileLogger(log: JobLog): Logger {
  return new Logger(() => (level, message) => log(FROM_GRAPHILE[level] ?? "debug", message));
}
