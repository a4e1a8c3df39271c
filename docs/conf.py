# Sphinx configuration of qrdma's documentation.  scripts/check-docs
# builds it with warnings as errors (the meson test "docs").
#
# Only what Sphinx has of its own: Debian 12's python3-sphinx (5.3) and
# nothing else is needed to build it.

project = 'qrdma'
copyright = '2026, The qrdma developers'

extensions = []

# References are checked by docutils and by :doc:, not against every
# Python or C object the text happens to name.
nitpicky = False
