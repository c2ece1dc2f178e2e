import type { Composition } from '../compose.ts';
import type { ParsedArgs } from './args.ts';

export interface CommandResult {
  /** Printed with --json. */
  json: unknown;
  /** Printed otherwise. */
  text: string;
}

export interface Command {
  /** The words that select it, e.g. "customer create". */
  name: string;
  usage: string;
  summary: string;
  /** Creates the data directory and database when they do not exist (others refuse to run without them). */
  createsDatabase?: boolean;
  run(args: ParsedArgs, ctx: { app: Composition }): Promise<CommandResult>;
}
