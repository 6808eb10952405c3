"""The node an experiment's pods are pinned to, kept in a file on redline's machine across processes (pin_node)."""

from __future__ import annotations

from pathlib import Path

from redline.targets.kubernetes_names import is_dns_subdomain


def read_pin(path: Path) -> str | None:
    """The node an experiment was pinned to, if a file names one that can be a node's name."""
    try:
        node = path.read_text().strip()
    except OSError:
        return None
    return node if is_dns_subdomain(node) else None


def write_pin(path: Path, node: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(node + "\n")


__all__ = ["read_pin", "write_pin"]
