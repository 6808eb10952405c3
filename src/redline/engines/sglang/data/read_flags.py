"""Rebuild serve-flags.json from SGLang's own source, without importing it (it needs torch and a GPU stack).

    pip download --no-deps --python-version 3.12 --only-binary=:all: sglang==0.5.17 -d /tmp/sgl
    unzip -q /tmp/sgl/sglang-0.5.17-*.whl -d /tmp/sgl/src
    python read_flags.py /tmp/sgl/src/sglang/srt/server_args.py 0.5.17 > serve-flags.json

SGLang 0.5.17 builds its parser two ways, and this reads both with ast:
- `add_cli_args_from_dataclass` (srt/arg_groups/arg_utils.py) turns every ServerArgs field annotated
  `A[T, "help"]` or `A[T, Arg(...)]` into `--field-name` (or Arg.cli_name) plus Arg.aliases, dest the
  field; a bool field is store_true; Arg.action may be argparse.BooleanOptionalAction (adds --no-X);
- `ServerArgs.add_cli_args` adds the rest by hand (`parser.add_argument(...)`: dynamic choices,
  --config, and the deprecated aliases).
The parser is a plain argparse.ArgumentParser: prefixes are abbreviations, underscores are not dashes.
"""

import ast
import json
import sys

NO_VALUE_ACTIONS = {
    "store_true",
    "store_false",
    "store_const",
    "count",
    "help",
    "version",
    "DeprecatedAction",
    "DeprecatedStoreTrueAction",
    "DeprecatedStoreConstAction",
}


def _name(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _is_text(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    return isinstance(node, ast.BinOp) and _is_text(node.left)


def _is_bool(node: ast.AST) -> bool:
    """bool, Optional[bool], Union[bool, None], bool | None."""
    if isinstance(node, ast.Name):
        return node.id == "bool"
    if isinstance(node, ast.Subscript) and _name(node.value) in ("Optional", "Union"):
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        kept = [p for p in parts if not (isinstance(p, ast.Constant) and p.value is None)]
        return len(kept) == 1 and _is_bool(kept[0])
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        sides = [s for s in (node.left, node.right) if not (isinstance(s, ast.Constant) and s.value is None)]
        return len(sides) == 1 and _is_bool(sides[0])
    return False


def _keywords(call: ast.Call) -> dict[str, ast.AST]:
    return {k.arg: k.value for k in call.keywords if k.arg}


def _add(table: dict[str, str], takes: set[str], names: list[str], dest: str, action: str | None, value: bool) -> None:
    for option in names:
        table[option] = dest
        if value:
            takes.add(option)
        if action == "BooleanOptionalAction" and option.startswith("--"):
            table["--no-" + option[2:]] = dest


def _field(node: ast.AnnAssign, table: dict[str, str], takes: set[str]) -> None:
    ann = node.annotation
    if not (isinstance(node.target, ast.Name) and isinstance(ann, ast.Subscript)):
        return
    if _name(ann.value) not in ("A", "Annotated"):
        return
    parts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
    meta = next((p for p in parts[1:] if _is_text(p) or (isinstance(p, ast.Call) and _name(p.func) == "Arg")), None)
    if meta is None:
        return  # no Arg and no help text: arg_utils skips the field
    kw = _keywords(meta) if isinstance(meta, ast.Call) else {}
    no_cli = kw.get("no_cli")
    if isinstance(no_cli, ast.Constant) and no_cli.value is True:
        return
    field = node.target.id
    cli = _name(kw.get("cli_name")) or "--" + field.replace("_", "-")
    listed = kw.get("aliases")
    aliases = [_name(e) for e in listed.elts] if isinstance(listed, ast.List) else []
    action = _name(kw.get("action"))
    value = action not in NO_VALUE_ACTIONS and action != "BooleanOptionalAction" if action else not _is_bool(parts[0])
    _add(table, takes, [cli, *[a for a in aliases if a]], field, action, value)


def _manual(call: ast.Call, table: dict[str, str], takes: set[str]) -> None:
    names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if not names:
        return
    kw = _keywords(call)
    long = next((n for n in names if n.startswith("--")), names[0])
    dest = _name(kw.get("dest")) or long.lstrip("-").replace("-", "_")
    action = _name(kw.get("action"))
    nargs = kw.get("nargs")
    value = action not in NO_VALUE_ACTIONS and not (isinstance(nargs, ast.Constant) and nargs.value == 0)
    _add(table, takes, names, dest, action, value)


def read_server_args(source: str) -> tuple[dict[str, str], set[str]]:
    tree = ast.parse(source)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ServerArgs")
    table: dict[str, str] = {}
    takes: set[str] = set()
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign):
            _field(stmt, table, takes)
    add_cli = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "add_cli_args")
    for node in ast.walk(add_cli):
        if isinstance(node, ast.Call) and _name(node.func) == "add_argument":
            _manual(node, table, takes)
    return table, takes


def main(path: str, version: str) -> None:
    with open(path, encoding="utf-8") as f:
        table, takes = read_server_args(f.read())
    out = {
        "source": f"sglang {version}: the option strings of `python -m sglang.launch_server` (prog `sglang serve`), "
        "read with ast from sglang/srt/server_args.py (ServerArgs fields through "
        "add_cli_args_from_dataclass, then ServerArgs.add_cli_args) by engines/sglang/data/read_flags.py",
        "options": dict(sorted(table.items())),
        "takes_value": sorted(takes),
    }
    sys.stdout.write(json.dumps(out, indent=0) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
