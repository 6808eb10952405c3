"""An engine's serve flags and environment, judged against the engine's real flag table: engine-neutral.

Each engine ships data/serve-flags.json, read from its own argparse parser, and a FlagTable
saying which options a ServeConfig owns, which are serving levers, and why others are
refused. An extra flag is resolved the way the engine's parser would resolve it (exact
option, else a unique prefix: argparse's allow_abbrev), then judged by the option it lands
on. Owned options are refused in any spelling, even one the engine itself would reject,
because the recorded config must say what ran.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources

from redline.engines.json_levers import SubKeys, check_json_lever
from redline.errors import InputError
from redline.models import ServeConfig, Widening

# Why a flag is refused; shared wording so both engines say it the same way.
CODE = "loads Python code named by the caller"
FILES = "reads or writes a path on the host"
NETWORK = "connects the server to other hosts"
ACCESS = "changes who can reach the server and how"
SOURCE = "changes where the model's code or files come from"
LOADER = "changes which code the loader or the interpreter runs"
ENV_SOURCE = "changes where code and files come from"

# Environment no engine may get: the loader's and the interpreter's own switches, and the hub's paths.
LOADER_ENV = (
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "PYTHONUSERBASE",
    "PYTHONINSPECT",
    "PATH",
    "BASH_ENV",
    "ENV",
    "NCCL_NET_PLUGIN",
    "NCCL_TUNER_PLUGIN",
    "NCCL_PROFILER_PLUGIN",
)
SOURCE_ENV = (
    "HF_ENDPOINT",
    "HF_HUB_ENDPOINT",
    "HF_HOME",
    "HF_HUB_CACHE",
    "HUGGINGFACE_HUB_CACHE",
    "TRANSFORMERS_CACHE",
)
# The runtime's thread, memory and collective knobs: levers for any engine.
RUNTIME_ENV = frozenset(
    {
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "TOKENIZERS_PARALLELISM",
        "PYTORCH_CUDA_ALLOC_CONF",
        "CUDA_DEVICE_MAX_CONNECTIONS",
        "NCCL_DEBUG",
        "NCCL_P2P_DISABLE",
        "NCCL_IB_DISABLE",
        "NCCL_CUMEM_ENABLE",
    }
)


def reasons(**groups: Iterable[str]) -> dict[str, str]:
    """{name: why} from why=names groups, e.g. reasons(**{CODE: ("worker_cls",)})."""
    return {name: why for why, names in groups.items() for name in names}


@dataclass(frozen=True)
class FlagTable:
    """One engine's allowlist over its real option table."""

    package: str  # holds data/serve-flags.json
    title: str  # vLLM, SGLang: how messages name the engine
    command: str  # `vllm serve`: how messages name the command whose options these are
    widen_key: str  # the engine's key under widen: in the server config
    owned: frozenset[str]
    levers: frozenset[str]
    refused: dict[str, str]
    env_levers: frozenset[str]
    env_refused: dict[str, str]
    underscores: bool = True  # the parser reads --a_b as --a-b
    subkeys: bool = False  # a JSON-valued option takes dotted sub-keys (--x.y=v)
    help_command: str = ""  # where a person checks a spelling: `vllm serve --help`
    # The levers that take a JSON object, and the sub-keys each allows (engines/json_levers.py); every other lever
    # takes no sub-key and no JSON object.
    json_levers: Mapping[str, SubKeys] = field(default_factory=dict)
    subkey_refused: Mapping[str, str] = field(default_factory=dict)  # why a sub-key no top-level flag names is refused

    @cached_property
    def _data(self) -> tuple[dict[str, str], frozenset[str]]:
        text = resources.files(self.package).joinpath("data/serve-flags.json").read_text(encoding="utf-8")
        data = json.loads(text)
        return data["options"], frozenset(data["takes_value"])

    @property
    def options(self) -> dict[str, str]:
        """Every option string the engine's parser knows, to the dest it sets."""
        return self._data[0]

    @property
    def takes_value(self) -> frozenset[str]:
        return self._data[1]

    def _lookup(self, flag: str, spelled: str) -> str:
        options = self.options
        if spelled in options:
            return options[spelled]
        matches = {options[o] for o in options if o.startswith(spelled) and o.startswith("--")}
        if len(matches) == 1:  # argparse's allow_abbrev: a unique prefix is that option
            return matches.pop()
        if matches:
            raise InputError(
                f"extra flag {flag!r} is ambiguous: {self.title} would read it as one of "
                f"{sorted(matches)[:6]}; spell the option out"
            )
        raise InputError(
            f"extra flag {flag!r} is not a {self.command} option: check its spelling against {self.help_command}"
        )

    def resolve(self, flag: str) -> str:
        """The option the engine's parser would take `flag` (--name or --name=value) for, as it names its dest."""
        name = flag.split("=", 1)[0]
        base = name.split(".", 1)[0]  # a dotted sub-key of a JSON-valued flag belongs to that flag
        dest = self._lookup(flag, "--" + base[2:].replace("_", "-"))
        odd = ("." in name and not self.subkeys) or ("_" in base and not self.underscores)
        if odd and dest not in self.owned:  # the engine would not read this spelling at all
            raise InputError(
                f"extra flag {flag!r} is not a {self.command} option as written: {self.title}'s parser "
                f"takes dashes and no dotted sub-keys; write it as "
                f"--{base[2:].replace('_', '-')}{flag[len(name) :]}"
            )
        return dest

    @cached_property
    def _takes_value(self) -> frozenset[str]:
        """The dests whose options take a value (an option and its aliases take the same)."""
        return frozenset(dest for option, dest in self.options.items() if option in self.takes_value)

    def deploy_option(self, item: str) -> tuple[str, bool]:
        """The option an item of a deploy's argument list (a Helm values file's) lands on, as the engine's parser
        would resolve it, and whether it takes a value (written after `=` or as the next item): `--name[=v]` exact or
        a unique prefix, `_` read as `-`, a JSON-valued flag's dotted sub-key its flag's; `-tp[=v]` an alias (or a
        unique prefix of one, as argparse reads a single dash). InputError where it is ambiguous or no option."""
        spelled = item.split("=", 1)[0]
        if spelled.startswith("--"):
            base = spelled.split(".", 1)[0]
            dest = self._lookup(item, "--" + base[2:].replace("_", "-"))
        elif spelled in self.options:
            dest = self.options[spelled]
        else:
            matches = {d for o, d in self.options.items() if o.startswith(spelled) and not o.startswith("--")}
            if len(matches) != 1:
                why = f"one of {sorted(matches)[:6]}" if matches else "no option"
                raise InputError(f"extra flag {item!r} is not one {self.command} option ({why})")
            dest = matches.pop()
        return dest, dest in self._takes_value

    def check_owned(self, flag: str) -> str:
        """The flag's dest, unless a ServeConfig field owns it (then InputError: set that field)."""
        dest = self.resolve(flag)
        if dest in self.owned:
            raise InputError(f"extra flag {flag!r} sets {dest}, a knob the serve config owns: set that field instead")
        return dest

    def check_flag(self, flag: str, widened: frozenset[str] = frozenset()) -> str | None:
        """Refuse a flag that is owned, refused or not a lever; the widening it used (its dest), or None."""
        dest = self.check_owned(flag)
        if dest in self.levers:
            check_json_lever(flag, dest, self.json_levers.get(dest), self._subkey_reason)
            return None
        if dest in widened:
            return dest
        why = self.refused.get(dest, "is not a serving lever redline allows")
        refusal = f"it {why}" if dest in self.refused else why
        raise InputError(
            f"extra flag {flag!r} ({dest}) is refused: {refusal}; a person can widen the allowlist "
            f"in the server config (widen: {self.widen_key}: flags:), and every rung it touches "
            "records it"
        )

    def _subkey_reason(self, key: str) -> str | None:
        """Why a sub-key is refused: its top-level flag's reason (a draft's revision as --revision's), or its own."""
        return self.refused.get(key) or self.subkey_refused.get(key)

    def check_env(self, name: str, widened: frozenset[str] = frozenset()) -> str | None:
        """Refuse an environment variable that is not a lever; the widening it used, or None."""
        if name in self.env_levers:
            return None
        if name in widened:
            return name
        why = self.env_refused.get(name)
        refusal = f"it {why}" if why else "it is not an engine setting redline allows"
        raise InputError(
            f"environment variable {name} is refused: {refusal}; a person can widen the allowlist "
            f"in the server config (widen: {self.widen_key}: env:), and every rung it touches records it"
        )

    def admit(self, config: ServeConfig, widening: Widening | None = None) -> list[str]:
        """Refuse extra flags and env outside the allowlist (unless widened); the widenings used, as rungs say them."""
        widening = widening or Widening()
        wide_flags = frozenset(self.resolve(f) for f in widening.flags)
        used = [f"flag {f} ({dest})" for f in config.extra_flags if (dest := self.check_flag(f, wide_flags))]
        used += [f"env {name}" for name in config.env if self.check_env(name, frozenset(widening.env))]
        return used
