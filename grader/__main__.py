import sys

from grader.commands.cli import main

sys.exit(main())
