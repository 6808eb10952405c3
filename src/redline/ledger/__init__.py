"""The YAML files redline keeps: ruamel round-trip, append-only, atomic, locked."""

from redline.ledger.ladder_file import (
    Change,
    append_rung,
    check_derived,
    create_ladder,
    load_ladder,
    read_ladder,
    rung_file,
    runs_dir,
    server_file,
    set_ceiling,
    set_deployment_compile_cache,
    set_gpu,
    set_host,
    set_smoke_test,
    update_ladder,
)

__all__ = [
    "Change",
    "append_rung",
    "check_derived",
    "create_ladder",
    "load_ladder",
    "read_ladder",
    "rung_file",
    "runs_dir",
    "server_file",
    "set_ceiling",
    "set_gpu",
    "set_deployment_compile_cache",
    "set_host",
    "set_smoke_test",
    "update_ladder",
]
