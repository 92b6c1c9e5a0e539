"""Figure and table scripts, one module per paper figure or table (figures/<paper>/)."""
