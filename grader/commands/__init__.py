"""The commands: thin layers over the library, one module or sub-package each.

``cli`` parses arguments and catches ``GraderError`` once; ``batch`` grades a
folder in parallel workers; ``courses`` holds the nbgrader and Gradescope
integrations and their settings; ``kit`` builds the student kit. Commands may
import every layer below them.
"""
