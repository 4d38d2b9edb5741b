import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ConfigError } from '../errors/troupe-error.ts';

export const INIT_HELP = `troupe init env|harness|runtime <name> [options]

Scaffolds a standalone package that builds to dist/ and passes its conformance test:
  env      @troupe/env-<name>: a defineEnv module (troupe eval --env ./dist/index.js, or --env <name>
           once installed); its test runs an episode against the scripted model server
  harness  @troupe/harness-<name>: a program harness on @troupe/program-kit with createHarness;
           its test runs the recorded harness conformance checks
  runtime  @troupe/runtime-<name>: a Runtime with createRuntime; its test runs the sandbox
           conformance suite (@troupe/verifiers/conformance)
Then: cd <dir> && npm install && npm run build && npm test

<name>: lower case letters and digits, words joined by - or _ (my-agent, my_agent); the package
name uses -, harness and runtime ids use _ (harness = "my_agent"), env ids use -.

Options:
  -d, --dir D        where to create the package (default ./<kind>-<name>); refused unless
                     missing or empty
  -t, --template T   env only: isolated-verifier (a solver graded by a hidden checker in a fresh
                     sandbox, on createIsolatedVerifierEnv) instead of the plain defineEnv module
      --workspace    inside the troupe monorepo: workspace:* dependencies, the repo's shared
                     tsconfig, LICENSE and test script (what pnpm new:harness uses)
  -h, --help
`;

export const INIT_KINDS = ['env', 'harness', 'runtime'] as const;
/** Variants of a kind's template (`troupe init env <name> --template isolated-verifier`). */
export const INIT_TEMPLATES = { env: ['isolated-verifier'], harness: [], runtime: [] } as const satisfies Record<
  string,
  readonly string[]
>;
export type InitKind = (typeof INIT_KINDS)[number];

export interface ScaffoldOptions {
  kind: InitKind;
  name: string;
  /** Target folder (created; must be missing or empty). */
  dir: string;
  /** Scaffold for the troupe monorepo whose root is this folder (workspace:* dependencies). */
  workspaceRoot?: string;
  /** A variant of the kind's template (see {@link INIT_TEMPLATES}), e.g. `isolated-verifier` for an env. */
  template?: string;
}

export interface Scaffold {
  dir: string;
  packageName: string;
  /** The id configs use: `harness = "<id>"`, `runtime = "<id>"`, `--env <id>`. */
  id: string;
  /** Files written, relative to `dir`, sorted. */
  files: string[];
}

/** The templates folder shipped with this package (`templates/`, beside `src/` and `dist/`). */
export const TEMPLATES_DIR = fileURLToPath(new URL('../../templates/', import.meta.url));

const NAME = /^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$/;

const KINDS: Record<
  InitKind,
  { dependencies: string[]; description: (id: string) => string; testWhat: string; usage: (names: Names) => string }
> = {
  env: {
    dependencies: ['@troupe/verifiers'],
    description: (id) => `The ${id} env for troupe.`,
    testWhat: 'one episode against the scripted model server',
    usage: ({ id }) =>
      `\`\`\`sh\nnpx troupe eval --env ./dist/index.js -m <model> -b <base-url>   # from this folder\nnpx troupe eval --env ${id} -m <model> -b <base-url>              # where this package is installed\n\`\`\`\n`,
  },
  harness: {
    dependencies: ['@troupe/program-kit', '@troupe/verifiers'],
    description: (id) => `The ${id} harness for troupe.`,
    testWhat: 'the recorded harness conformance checks',
    usage: ({ id }) => `\`\`\`toml\n[env.solver]\nharness = "${id}"\n\`\`\`\n\nor \`troupe eval --harness ${id} …\`.\n`,
  },
  runtime: {
    dependencies: ['@troupe/verifiers'],
    description: (id) => `The ${id} runtime for troupe.`,
    testWhat: 'the sandbox conformance suite',
    usage: ({ id }) => `\`\`\`toml\n[env.solver]\nruntime = { id = "${id}" }\n\`\`\`\n\nor \`troupe eval --runtime ${id} …\`.\n`,
  },
};

interface Names {
  id: string;
  kebab: string;
  pascal: string;
  camel: string;
  constant: string;
  packageName: string;
}

function names(kind: InitKind, name: string): Names {
  const kebab = name.replace(/_/g, '-');
  const pascal = kebab.replace(/(^|-)([a-z0-9])/g, (_m, _d, c: string) => c.toUpperCase());
  return {
    // Harness and runtime ids are normalised to snake_case by the plugin loader; env ids stay kebab.
    id: kind === 'env' ? kebab : kebab.replace(/-/g, '_'),
    kebab,
    pascal,
    camel: pascal.charAt(0).toLowerCase() + pascal.slice(1),
    constant: kebab.replace(/-/g, '_').toUpperCase(),
    packageName: `@troupe/${kind}-${kebab}`,
  };
}

/** This package's own manifest: its version gives the range scaffolds depend on. */
function ownManifest(): { version: string; peerDependencies?: Record<string, string> } {
  return JSON.parse(readFileSync(join(TEMPLATES_DIR, '..', 'package.json'), 'utf8'));
}

function templateFiles(dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? templateFiles(dir, join(prefix, entry.name)) : [join(prefix, entry.name)],
  );
}

/** Writes a new package of `kind` into `dir` from the templates; refuses a non-empty `dir`. */
export function scaffoldPackage(options: ScaffoldOptions): Scaffold {
  const { kind } = options;
  if (!INIT_KINDS.includes(kind))
    throw new ConfigError(`init: unknown kind ${JSON.stringify(kind)} (expected ${INIT_KINDS.join(', ')})`);
  if (!NAME.test(options.name)) {
    throw new ConfigError(
      `init ${kind}: bad name ${JSON.stringify(options.name)}: use lower case letters and digits, words joined by - or _ (e.g. my-${kind})`,
    );
  }
  const dir = resolve(options.dir);
  if (existsSync(dir) && (!statSync(dir).isDirectory() || readdirSync(dir).length > 0))
    throw new ConfigError(`init ${kind}: ${dir} exists and is not empty (choose another --dir)`);
  const templates: readonly string[] = INIT_TEMPLATES[kind];
  if (options.template !== undefined && !templates.includes(options.template))
    throw new ConfigError(
      `init ${kind}: unknown --template ${JSON.stringify(options.template)} (${templates.length > 0 ? `expected ${templates.join(', ')}` : `${kind} has none`})`,
    );
  const n = names(kind, options.name);
  const spec = KINDS[kind];
  const manifest = ownManifest();
  const range = `^${manifest.version}`;
  const values: Record<string, string> = {
    __PACKAGE__: n.packageName,
    __DESCRIPTION__: spec.description(n.id),
    __KIND__: kind,
    __ID__: n.id,
    __KEBAB__: n.kebab,
    __PASCAL__: n.pascal,
    __CAMEL__: n.camel,
    __CONST__: n.constant,
    __ZOD_RANGE__: manifest.peerDependencies?.zod ?? '^4.1.0',
    __VITEST_RANGE__: manifest.peerDependencies?.vitest ?? '~4.1.12',
    __TEST_WHAT__: spec.testWhat,
    __USAGE__: spec.usage(n),
  };
  const fill = (text: string) => text.replace(/__[A-Z_]+?__/g, (key) => values[key] ?? key);
  const out = new Map<string, string>();
  // A variant's files replace the kind's own of the same name.
  for (const source of ['common', kind, ...(options.template ? [`${kind}-${options.template}`] : [])]) {
    const root = join(TEMPLATES_DIR, source);
    for (const file of templateFiles(root)) {
      const target = fill(file.replace(/\.tmpl$/, '').replace(/^gitignore$/, '.gitignore'))
        .split(sep)
        .join('/');
      out.set(target, fill(readFileSync(join(root, file), 'utf8')));
    }
  }
  const pkg = JSON.parse(out.get('package.json')!) as Record<string, Record<string, unknown>>;
  pkg.dependencies = Object.fromEntries(spec.dependencies.map((dep) => [dep, range]));
  if (options.workspaceRoot) workspaceLayout(out, pkg, dir, resolve(options.workspaceRoot));
  out.set('package.json', `${JSON.stringify(pkg, null, 2)}\n`);
  const leftover = [...out].find(([, text]) => /__[A-Z]+(?:_[A-Z]+)*__/.test(text));
  // bare-error: the templates ship with troupe; a leftover placeholder is a bug in them
  if (leftover) throw new Error(`troupe init: template ${leftover[0]} has an unknown placeholder`);
  for (const [file, text] of out) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return { dir, packageName: n.packageName, id: n.id, files: [...out.keys()].sort() };
}

/** The monorepo layout: workspace:* dependencies, the shared tsconfig, a source export condition. */
function workspaceLayout(out: Map<string, string>, pkg: Record<string, Record<string, unknown>>, dir: string, root: string) {
  const up = relative(dir, root).split(sep).join('/');
  for (const dep of Object.keys(pkg.dependencies ?? {})) pkg.dependencies![dep] = 'workspace:*';
  const { zod } = pkg.devDependencies as Record<string, string>;
  pkg.devDependencies = { '@troupe/tsconfig': 'workspace:*', zod };
  pkg.scripts = { typecheck: 'tsc -p tsconfig.json', test: 'vitest run --project unit', build: 'tsc -p tsconfig.build.json' };
  pkg.exports = {
    '.': { '@troupe/source': './src/index.ts', ...(pkg.exports?.['.'] as object) },
    './package.json': './package.json',
  };
  (pkg as Record<string, unknown>).files = ['dist', 'src', '!src/**/*.test.ts', '!src/**/__fixtures__', 'README.md', 'LICENSE'];
  out.set(
    'tsconfig.json',
    `{ "extends": "${up}/tooling/tsconfig/base.json", "compilerOptions": { "noEmit": true }, "include": ["src", "test"] }\n`,
  );
  out.set('tsconfig.build.json', `{ "extends": "${up}/tooling/tsconfig/build.json" }\n`);
  out.delete('.gitignore');
  if (existsSync(join(root, 'LICENSE'))) out.set('LICENSE', readFileSync(join(root, 'LICENSE'), 'utf8'));
}

/** `troupe init env|harness|runtime <name> [--dir D] [--template T] [--workspace]`. */
export async function initCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      dir: { type: 'string', short: 'd' },
      template: { type: 'string', short: 't' },
      workspace: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: true,
  });
  if (values.help) {
    process.stdout.write(INIT_HELP);
    return 0;
  }
  const [kind, name, ...extra] = positionals;
  if (!kind || !name || extra.length > 0)
    throw new ConfigError(`init: expected a kind and a name, e.g. troupe init harness my-agent (troupe init --help)`);
  if (!INIT_KINDS.includes(kind as InitKind))
    throw new ConfigError(`init: unknown kind ${JSON.stringify(kind)} (expected ${INIT_KINDS.join(', ')})`);
  let workspaceRoot: string | undefined;
  if (values.workspace) {
    workspaceRoot = findUp(process.cwd(), 'pnpm-workspace.yaml');
    if (!workspaceRoot) throw new ConfigError('init --workspace: no pnpm-workspace.yaml here or above');
  }
  const made = scaffoldPackage({
    kind: kind as InitKind,
    name,
    dir: values.dir ?? `${kind}-${name.replace(/_/g, '-')}`,
    ...(values.template !== undefined ? { template: values.template } : {}),
    ...(workspaceRoot ? { workspaceRoot } : {}),
  });
  const shown = relative(process.cwd(), made.dir) || '.';
  process.stdout.write(
    `created ${shown} (${made.packageName}, id ${made.id}):\n${made.files.map((f) => `  ${f}\n`).join('')}` +
      (workspaceRoot
        ? `next: pnpm install, then fill in the TODOs\n`
        : `next: cd ${shown} && npm install && npm run build && npm test, then fill in the TODOs\n`),
  );
  return 0;
}

function findUp(from: string, file: string): string | undefined {
  for (let dir = resolve(from); ; dir = dirname(dir)) {
    if (existsSync(join(dir, file))) return dir;
    if (dirname(dir) === dir) return undefined;
  }
}
