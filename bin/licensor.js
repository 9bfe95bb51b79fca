#!/usr/bin/env node
// The operator CLI: `node bin/licensor.js <command>`. Runs the compiled service (npm install builds it).
import { main } from '../packages/server/dist/cli.js';

await main(process.argv.slice(2));
