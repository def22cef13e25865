"""Looking at schedules: comparisons of several schedules, and pictures of what they do.

`compare` builds, checks and times schedules of one algorithm; `plot_tiles`,
`plot_footprint` and `plot_roofline` draw with matplotlib, an optional dependency imported
only when a picture is asked for. Everything here is top level in the pipeline's terms: it
uses lowering, building and running, and no stage imports it.
"""
