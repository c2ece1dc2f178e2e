#!/usr/bin/env node
// The CLI runs the TypeScript sources directly (no build step), like `npm start`.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
