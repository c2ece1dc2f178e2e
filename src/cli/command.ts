import type { AuditContext } from '../audit/context.ts';
import type { Composition } from '../compose/index.ts';
import type { ParsedArgs } from './args.ts';

export interface CommandResult {
  /** Printed with --json. */
  json: unknown;
  /** Printed otherwise. */
  text: string;
  /** The command wrote its output itself (a stream to stdout): nothing more is printed. */
  printed?: boolean;
  /** The process's exit code, when not 0 (1: done in part, e.g. some import rows failed). */
  exitCode?: number;
}

export interface Command {
  /** The words that select it, e.g. "customer create". */
  name: string;
  usage: string;
  summary: string;
  /** What each option of its usage means, for this command (`--json` and `--help` are described once, in help.ts). */
  options: Record<string, string>;
  /** Creates the data directory and database when they do not exist (others refuse to run without them). */
  createsDatabase?: boolean;
  /** `auditContext`: the operator, for every change the command makes (the audit log's actor). */
  run(args: ParsedArgs, ctx: { app: Composition; auditContext: AuditContext }): Promise<CommandResult>;
}
