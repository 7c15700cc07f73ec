/** `fcctl --json reconcile run --all --consumer C --out-dir DIR …more`: the argv every `--all` test starts from. */
export const allArgv = (consumer: string, outDir: string, ...more: string[]): string[] => [
  '--json',
  'reconcile',
  'run',
  '--all',
  '--consumer',
  consumer,
  '--out-dir',
  outDir,
  ...more,
];
