import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

/**
 * A program running in a real terminal (tmux), for checking what a person would see. Each session
 * has a tmux server of its own (`-L`): on a shared server, a session started while another test's
 * kill-session shuts the last one down meets "server exited unexpectedly" (seen in CI).
 */
export class TmuxSession {
  readonly name = `fcctl-${randomBytes(4).toString('hex')}`;

  constructor(command: string, env: Record<string, string | undefined>, size = { width: 120, height: 40 }) {
    const exports = Object.entries(env)
      .filter(([k, v]) => k.startsWith('FCCTL_') && v !== undefined)
      .map(([k, v]) => `export ${k}='${String(v).replace(/'/g, `'\\''`)}';`)
      .join(' ');
    // CI is set in CI runs: the view must still be interactive inside this terminal.
    execFileSync('tmux', [
      '-L',
      this.name,
      'new-session',
      '-d',
      '-s',
      this.name,
      '-x',
      String(size.width),
      '-y',
      String(size.height),
      `unset CI; ${exports} ${command}; echo "[exit $?]"; sleep 600`,
    ]);
  }

  /**
   * The visible screen, trailing blank lines dropped. `joined`: a line the terminal wrapped is one
   * line again (`capture-pane -J`), so a line wider than the terminal shows as wider.
   */
  screen(o: { joined?: boolean } = {}): string {
    const args = ['-L', this.name, 'capture-pane', '-p', ...(o.joined ? ['-J'] : []), '-t', this.name];
    return execFileSync('tmux', args, { encoding: 'utf8' }).replace(/\n+$/, '');
  }

  /** Keys typed into the terminal, as tmux send-keys names them (e.g. 'C-c'). */
  sendKeys(...keys: string[]): void {
    execFileSync('tmux', ['-L', this.name, 'send-keys', '-t', this.name, ...keys]);
  }

  /** The terminal resized (the program gets SIGWINCH). */
  resize(width: number, height: number): void {
    execFileSync('tmux', [
      '-L',
      this.name,
      'resize-window',
      '-t',
      this.name,
      '-x',
      String(width),
      '-y',
      String(height),
    ]);
  }

  kill(): void {
    try {
      execFileSync('tmux', ['-L', this.name, 'kill-server'], { stdio: 'ignore' });
    } catch {
      /* already gone */
    }
  }
}
