"""The LEDBAT decrease-schemes paper's figures, tables and verdict: `python -m figures.ledbat`."""
