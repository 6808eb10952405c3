"""Engines: pure argv builders and log/result parsers. No I/O here."""
