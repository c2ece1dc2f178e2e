/**
 * Files holding secrets are readable by their owner only. The SQLite file is created here, 0600,
 * before better-sqlite3 opens it: SQLite creates its -wal and -shm files with the mode of the
 * database file (and fixes them up against the umask), so they follow. Directories created for it
 * are 0700. Existing files and directories are left as they are: the operator may have chosen them.
 */
import { chmodSync, closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';

export const PRIVATE_FILE_MODE = 0o600;
export const PRIVATE_DIR_MODE = 0o700;

/** Creates `dir` (and missing parents) 0700, whatever the umask; an existing directory is untouched. */
export function makePrivateDir(dir: string): void {
  const first = mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  if (first === undefined) return;
  // mkdir's mode passes through the umask: set the created directories' modes exactly.
  for (let path = dir; path.length >= first.length; path = dirname(path)) {
    chmodSync(path, PRIVATE_DIR_MODE);
    if (path === first) break;
  }
}

/** Creates the file at `path` empty and 0600 unless it exists, with its directory made private. */
export function createPrivateFile(path: string): void {
  makePrivateDir(dirname(path));
  let fd: number;
  try {
    fd = openSync(path, 'wx', PRIVATE_FILE_MODE);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return;
    throw error;
  }
  try {
    // A umask such as 0277 would narrow the mode further than asked: set it exactly.
    chmodSync(path, PRIVATE_FILE_MODE);
  } finally {
    closeSync(fd);
  }
}
