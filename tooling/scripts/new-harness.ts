/**
 * `pnpm new:harness <id>`: creates `packages/harnesses/<kebab-id>/` (`@troupe/harness-<kebab-id>`)
 * with a harness class built on `@troupe/harness-kit`, `createHarness`, and a recorded
 * conformance test. Then run `pnpm install` and fill in the install script and launch plan.
 */
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const id = process.argv[2];
if (!id || !/^[a-z][a-z0-9_]*$/.test(id)) {
  process.stderr.write('usage: pnpm new:harness <id>   (snake_case, e.g. my_agent)\n');
  process.exit(2);
}
const kebab = id.replace(/_/g, '-');
const pascal = kebab.replace(/(^|-)([a-z0-9])/g, (_m, _d, c: string) => c.toUpperCase());
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = join(root, 'packages', 'harnesses', kebab);
if (existsSync(dir)) {
  process.stderr.write(`${dir} already exists\n`);
  process.exit(1);
}
mkdirSync(join(dir, 'src'), { recursive: true });
const files: Record<string, string> = {
  'package.json': `${JSON.stringify(
    {
      name: `@troupe/harness-${kebab}`,
      version: '0.1.0',
      description: `The ${id} harness.`,
      type: 'module',
      sideEffects: false,
      license: 'Apache-2.0',
      engines: { node: '>=20.19' },
      exports: {
        '.': {
          '@troupe/source': './src/index.ts',
          types: './dist/index.d.ts',
          import: './dist/index.js',
          default: './dist/index.js',
        },
        './package.json': './package.json',
      },
      files: ['dist', 'src', '!src/**/*.test.ts', '!src/**/__fixtures__', 'README.md', 'LICENSE'],
      scripts: { build: 'tsc -p tsconfig.build.json', typecheck: 'tsc -p tsconfig.json', test: 'vitest run --project unit' },
      dependencies: { '@troupe/harness-kit': 'workspace:*', '@troupe/verifiers': 'workspace:*' },
      peerDependencies: { zod: '^4.1.0' },
      devDependencies: { '@troupe/tsconfig': 'workspace:*', zod: '^4.1.0' },
      publishConfig: { access: 'public' },
    },
    null,
    2,
  )}\n`,
  'tsconfig.json':
    '{ "extends": "../../../tooling/tsconfig/base.json", "compilerOptions": { "noEmit": true }, "include": ["src", "test"] }\n',
  'tsconfig.build.json': '{ "extends": "../../../tooling/tsconfig/build.json" }\n',
  'README.md': `# @troupe/harness-${kebab}\n\nThe ${id} harness for troupe.\n\n## Install\n\n\`\`\`sh\nnpm install @troupe/harness-${kebab} @troupe/verifiers zod\n\`\`\`\n\n## Example\n\n\`\`\`toml\n[env.solver]\nharness = "${id}"\n\`\`\`\n`,
  'src/index.ts': `export * from './${kebab}-harness.ts';\n`,
  [`src/${kebab}-harness.ts`]: `import {
  CliHarnessOptionsSchema,
  containerCapabilities,
  foldedPrompt,
  parseHarnessOptions,
  SandboxProgramHarness,
  uvToolInstall,
  withV1,
} from '@troupe/harness-kit';
import { z } from 'zod';

/** The pinned release of the program. TODO: set it. */
export const ${pascal.toUpperCase()}_VERSION = '0.0.0';

/** Options of the \`${id}\` harness. */
export const ${pascal}HarnessOptionsSchema = CliHarnessOptionsSchema.extend({
  version: z.string().min(1).optional(),
}).strict();
export type ${pascal}HarnessOptions = z.infer<typeof ${pascal}HarnessOptionsSchema>;

/** TODO: one paragraph: what the program is, how it is installed and wired to interception. */
export class ${pascal}Harness extends SandboxProgramHarness {
  constructor(options: ${pascal}HarnessOptions = {}) {
    const version = options.version ?? ${pascal.toUpperCase()}_VERSION;
    super(
      {
        id: '${id}',
        info: { id: '${id}', program: \`${kebab} \${version}\`, version, dialect: 'chat', verifiedHere: false, verification: 'TODO' },
        capabilities: containerCapabilities(),
        // TODO: the documented install (uv tool install, a vendor installer …).
        installScript: uvToolInstall(\`${kebab}==\${version}\`),
        plan: ({ launch, scratch, prompt }) => ({
          // TODO: the documented non-interactive command; the secret goes in env or a config file, never argv.
          argv: ['${kebab}', '--prompt-file', \`\${scratch}/prompt.md\`],
          env: { HOME: \`\${scratch}/home\`, OPENAI_BASE_URL: withV1(launch.endpoint.baseUrl), OPENAI_API_KEY: launch.endpoint.secret },
          files: [{ path: \`\${scratch}/prompt.md\`, content: foldedPrompt(prompt) }],
        }),
      },
      options,
    );
  }
}

/** Builds the harness from untyped options (validated; errors name the field). */
export function createHarness(options: unknown = {}): ${pascal}Harness {
  return new ${pascal}Harness(parseHarnessOptions({ harnessId: '${id}', schema: ${pascal}HarnessOptionsSchema, value: options }));
}
`,
  [`src/${kebab}-harness.test.ts`]: `import { runRecordedHarnessConformance } from '@troupe/verifiers/testing';
import { describe, expect, it } from 'vitest';
import { ${pascal}Harness } from './${kebab}-harness.ts';

describe('${id}', () => {
  it('passes the recorded harness conformance checks', async () => {
    const { checks } = await runRecordedHarnessConformance({ harness: new ${pascal}Harness(), expect: { install: ['${kebab}=='] } });
    expect(checks.filter((check) => !check.ok)).toEqual([]);
  });
});
`,
};
for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
copyFileSync(join(root, 'LICENSE'), join(dir, 'LICENSE'));
process.stdout.write(
  `created ${dir} (@troupe/harness-${kebab}); now run pnpm install and fill in the TODOs (docs/contributing-a-harness.md)\n`,
);
