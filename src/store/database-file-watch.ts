import { statSync } from 'node:fs';

/**
 * Watches an open SQLite file for deletion or replacement. SQLite keeps writing to the open
 * inode of a deleted file without an error, so every record after the deletion would be lost at
 * exit without a word; this notices it (a `stat` every `intervalMs`, and on each check by the
 * writer), logs it once through `report`, and tells `/ready`.
 */
export class DatabaseFileWatch {
  private readonly identity: string | null;
  private problem: string | null = null;
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly path: string,
    intervalMs: number,
    private readonly report: (message: string) => void,
  ) {
    this.identity = this.stat();
    if (intervalMs > 0) {
      this.timer = setInterval(() => this.check(), intervalMs);
      this.timer.unref();
    }
  }

  /** `dev:ino` of the file now, or null when it is missing. */
  private stat(): string | null {
    try {
      const s = statSync(this.path);
      return `${s.dev}:${s.ino}`;
    } catch {
      return null;
    }
  }

  /** The problem with the file (deleted, replaced), or null; a new problem is reported once. */
  check(): string | null {
    if (this.identity === null) return null;
    const now = this.stat();
    let problem: string | null = null;
    if (now === null) problem = `the database file ${this.path} was deleted while the gateway runs: new generation records go to the deleted file and are lost at exit; restore the file and restart`;
    else if (now !== this.identity) problem = `the database file ${this.path} was replaced while the gateway runs: new generation records go to the old file; restart the gateway`;
    if (problem !== null && this.problem === null) this.report(problem);
    this.problem = problem;
    return problem;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
