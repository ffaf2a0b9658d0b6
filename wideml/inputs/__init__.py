"""The one door for data: what fit, predict and transform accept, turned into one object."""
