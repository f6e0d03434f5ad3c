// Bundles the extension (with vscode-languageclient) into out/extension.js, and the e2e runner
// (playwright-core stays external, loaded from node_modules) into out/test/e2e.js, and the unit
// tests of the pure modules into out/test/unit.js.
import * as esbuild from "esbuild";

const common = { bundle: true, platform: "node", format: "cjs", target: "node20", sourcemap: true, logLevel: "warning" };
await esbuild.build({ ...common, entryPoints: ["src/extension.ts"], outfile: "out/extension.js", external: ["vscode"], minify: true });
await esbuild.build({ ...common, entryPoints: ["test/e2e.ts"], outfile: "out/test/e2e.js", packages: "external" });
await esbuild.build({ ...common, entryPoints: ["test/unit.ts"], outfile: "out/test/unit.js", packages: "external" });
