#!/usr/bin/env python3
"""Writes upstream-config.json: the keys and types of prime-rl's config classes at one commit.

    python3 gen_upstream_config.py <prime-rl checkout> <commit> > upstream-config.json
    pnpm exec biome format --write upstream-config.json

It reads the pydantic classes of `packages/prime-rl-configs/src/prime_rl/configs/{trainer,shared,
inference}.py` with Python's `ast` (nothing is imported or run) and records, per class, each
field's annotation, default (when a literal) and the config classes the annotation names (type
aliases followed), with inherited fields. `troupe train --emit-prime-rl` output and the trainer
double's `@ trainer.toml` are checked against it.
"""

import ast
import json
import subprocess
import sys

FILES = ["trainer", "shared", "inference"]


def main():
    checkout, commit = sys.argv[1], sys.argv[2]
    classes, aliases, bases = {}, {}, {}
    for name in FILES:
        path = f"packages/prime-rl-configs/src/prime_rl/configs/{name}.py"
        source = subprocess.run(["git", "-C", checkout, "show", f"{commit}:{path}"], capture_output=True, text=True, check=True).stdout
        for node in ast.parse(source).body:
            if isinstance(node, ast.ClassDef):
                fields = {}
                for item in node.body:
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                        field = {"type": ast.unparse(item.annotation), "line": f"{path}:{item.lineno}"}
                        if item.value is not None:
                            value = item.value
                            if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "Field" and value.args:
                                value = value.args[0]
                            try:
                                default = ast.literal_eval(value)
                                json.dumps(default)
                                field["default"] = default
                            except Exception:
                                field["default_source"] = ast.unparse(item.value)
                        else:
                            field["required"] = True
                        fields[item.target.id] = field
                classes[f"{name}.{node.name}"] = {"file": path, "line": node.lineno, "fields": fields}
                bases[f"{name}.{node.name}"] = [ast.unparse(b) for b in node.bases]
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                if isinstance(target, ast.Name) and node.value is not None:
                    aliases[f"{name}.{target.id}"] = ast.unparse(node.value)

    def resolve(module, name):
        # A name means this module's class or alias, else shared's (what the modules import).
        for scope in (module, "shared"):
            if f"{scope}.{name}" in classes or f"{scope}.{name}" in aliases:
                return f"{scope}.{name}"
        return None

    def names_in(module, text, seen=()):
        out = []
        for token in ast.walk(ast.parse(text, mode="eval")):
            name = token.id if isinstance(token, ast.Name) else None
            if isinstance(token, ast.Constant) and isinstance(token.value, str):
                name = token.value.split(" ")[0]
            qualified = resolve(module, name) if name else None
            if qualified is None or qualified in seen:
                continue
            if qualified in classes:
                out.append(qualified)
            else:
                out += names_in(qualified.split(".")[0], aliases[qualified], (*seen, qualified))
        return list(dict.fromkeys(out))

    def all_fields(name, seen=()):
        fields = {}
        module = name.split(".")[0]
        for base in bases.get(name, []):
            qualified = resolve(module, base)
            if qualified in classes and qualified not in seen:
                fields.update(all_fields(qualified, (*seen, name)))
        fields.update(classes[name]["fields"])
        return fields

    out = {}
    for name in classes:
        fields = all_fields(name)
        for field in fields.values():
            field["classes"] = names_in(name.split(".")[0], field["type"])
        out[name] = {"file": classes[name]["file"], "line": classes[name]["line"], "fields": fields}
    json.dump(
        {
            "about": "Keys and types of prime-rl's config classes, read with ast by tooling/prime-rl-double/gen_upstream_config.py",
            "repository": "https://github.com/PrimeIntellect-ai/prime-rl",
            "commit": subprocess.run(["git", "-C", checkout, "rev-parse", commit], capture_output=True, text=True).stdout.strip(),
            "roots": {"trainer": "trainer.TrainerConfig", "inference": "inference.InferenceConfig"},
            "classes": out,
        },
        sys.stdout,
        indent=1,
        sort_keys=True,
    )
    print()


if __name__ == "__main__":
    main()
