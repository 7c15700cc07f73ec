import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

/** A program running in a real terminal (tmux), for checking what a person would see. */
export class TmuxSession {
  readonly name = `fcctl-${randomBytes(4).toString('hex')}`;

  constructor(command: string, env: Record<string, string | undefined>, size = { width: 120, height: 40 }) {
    const exports = Object.entries(env)
      .filter(([k, v]) => k.startsWith('FCCTL_') && v !== undefined)
      .map(([k, v]) => `export ${k}='${String(v).replace(/'/g, `'\\''`)}';`)
      .join(' ');
    // CI is set in CI runs: the view must still be interactive inside this terminal.
    execFileSync('tmux', ['new-session', '-d', '-s', this.name, '-x', String(size.width), '-y', String(size.height), `unset CI; ${exports} ${command}; echo "[exit $?]"; sleep 600`]);
  }

  /** The visible screen, trailing blank lines dropped. */
  screen(): string {
    return execFileSync('tmux', ['capture-pane', '-p', '-t', this.name], { encoding: 'utf8' }).replace(/\n+$/, '');
  }

  kill(): void {
    try {
      execFileSync('tmux', ['kill-session', '-t', this.name], { stdio: 'ignore' });
    } catch {
      /* already gone */
    }
  }
}
