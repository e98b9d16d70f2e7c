"""The marks of a model's graph: every successful run is a path START -> its states ->
SUCCESS, and a revisited state's id carries VISIT_MARK and the visit's number."""

START = "START"
SUCCESS = "SUCCESS"
VISIT_MARK = "#"
