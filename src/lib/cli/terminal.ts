/**
 * ink, React and yoga take most of a second to load; a cron run writing JSON lines never needs
 * them. main() loads them once, before the command runs, only when output goes to a terminal.
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
