/** Minimal `--flag value` / `--switch` parsing: commands declare what they accept. */
export interface ParsedArgs {
  positionals: string[];
  flags: Record<string, string | true>;
}

export class UsageError extends Error {}

/** Switches never take a value: `--json customer list` must not read "customer" as the value of --json. */
const SWITCHES = new Set(['json', 'help']);

export function parseArgs(argv: string[]): ParsedArgs {
  const positionals: string[] = [];
  const flags: Record<string, string | true> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '-h') {
      // The short form every command-line user tries first.
      flags.help = true;
    } else if (arg.startsWith('--')) {
      const [name, inline] = arg.slice(2).split(/=(.*)/s, 2);
      if (!name) throw new UsageError(`bad option ${arg}`);
      if (SWITCHES.has(name)) {
        if (inline !== undefined) throw new UsageError(`--${name} takes no value`);
        flags[name] = true;
      } else if (inline !== undefined) flags[name] = inline;
      else if (argv[i + 1] !== undefined && !argv[i + 1].startsWith('--')) flags[name] = argv[++i];
      else flags[name] = true;
    } else {
      positionals.push(arg);
    }
  }
  return { positionals, flags };
}

export function stringFlag(args: ParsedArgs, name: string, required: true): string;
export function stringFlag(args: ParsedArgs, name: string, required?: false): string | undefined;
export function stringFlag(args: ParsedArgs, name: string, required = false): string | undefined {
  const value = args.flags[name];
  if (value === true) throw new UsageError(`--${name} needs a value`);
  if (value === undefined && required) throw new UsageError(`--${name} is required`);
  return value;
}
