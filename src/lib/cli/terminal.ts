/**
 * ink, React and yoga take most of a second to load; a cron run writing JSON lines never needs
 * them. main() loads them once, in a preAction hook (just before a command's action, so never for
 * `--version`, `--help` or a refused flag), only when output goes to a terminal without `--json`.
 * Off a terminal neither is loaded at all (test/cli/startup-modules.test.ts).
 */
type Terminal = typeof import('./ui/terminal.js');
let loaded: Terminal | undefined;

export async function loadTerminal(): Promise<Terminal> {
  loaded ??= await import('./ui/terminal.js');
  return loaded;
}

/** The terminal renderer; only called on the interactive path, after `loadTerminal()`. */
export function terminal(): Terminal {
  if (!loaded) throw new Error('terminal view used before loadTerminal()');
  return loaded;
}
