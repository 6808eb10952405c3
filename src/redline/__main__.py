import sys

from redline.cli import main

if __name__ == "__main__":  # a worker process (anyio.to_process) loads this module again and must not run the CLI
    sys.exit(main())
