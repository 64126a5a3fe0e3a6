"""A suite file that fails to import: the page lists the error, the other suites still load."""

raise ImportError("this toy suite file is broken on purpose")
