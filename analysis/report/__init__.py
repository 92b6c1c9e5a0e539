"""The report code every paper's analysis shares, and the reports across papers (REPORT.md, the
browser report, README's status): figures/ holds what it writes, figures/README.md lists the modules."""
