"""Sphinx directive ``wideml-api``: the API reference of every public name in ``wideml.__all__``.

Each name is documented by autodoc (numpydoc renders the docstring) under the heading of its
group below. A name of ``wideml.__all__`` that no group lists still appears (under "Other"), and a
group naming something that is not public fails the build, so the page follows ``__all__``.
"""

from __future__ import annotations

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

#: Headings of the reference and the public names under each, in reading order.
GROUPS = {
    "Estimators": ["LOL", "PCA", "RRLDA", "LFL", "RP", "EmbeddingClassifier", "LOLRegressor",
                   "EncoderClassifier", "KernelPCA", "KPCATrick", "KernelLOL"],
    "Choosing d and testing": ["cross_validate_dims", "cross_validate_encoder", "two_sample_test"],
    "Feature stores and ingest": ["open_store", "FeatureStore", "create_store", "write_store", "ingest", "rechunk",
                                  "images_to_array", "ignore_feature_layout"],
    "Models and maps": ["save_model", "load_model", "write_maps"],
    "Configuration": ["config"],
    "Exceptions and warnings": ["WidemlError", "ConfigError", "StoreError", "PerformanceWarning"],
}

#: Members sklearn's bases give every estimator (documented by scikit-learn itself, not repeated here).
_SKLEARN_BASES = "BaseEstimator, TransformerMixin, ClassifierMixin, RegressorMixin"


class WidemlApi(SphinxDirective):
    """``.. wideml-api::``: one section per group of :data:`GROUPS`, one autodoc entry per public name."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        import wideml

        public = [name for name in wideml.__all__ if name != "__version__"]
        grouped = [name for names in GROUPS.values() for name in names]
        unknown = sorted(set(grouped) - set(public))
        if unknown:
            raise ExtensionError(f"docs/_ext/wideml_api.py lists {unknown}, which wideml.__all__ does not export")
        groups = dict(GROUPS)
        rest = [name for name in public if name not in grouped]
        if rest:
            groups["Other"] = rest
        lines = []
        for title, names in groups.items():
            lines += [title, "-" * len(title), ""]
            for name in names:
                obj = getattr(wideml, name)
                if isinstance(obj, type):
                    lines += [f".. autoclass:: wideml.{name}", "   :members:"]
                    if not issubclass(obj, BaseException):
                        lines.append(f"   :inherited-members: {_SKLEARN_BASES}")
                elif callable(obj):
                    lines.append(f".. autofunction:: wideml.{name}")
                else:
                    lines += [f".. autodata:: wideml.{name}", "   :no-value:", "",
                              f"   An instance of :class:`{type(obj).__module__}.{type(obj).__qualname__}`:", "",
                              f"   .. autoclass:: {type(obj).__module__}.{type(obj).__qualname__}", "      :members:",
                              "      :no-index:"]
                lines.append("")
        container = nodes.section()
        container.document = self.state.document
        nested_parse_with_titles(self.state, StringList(lines, source="wideml.__all__"), container)
        return container.children


def setup(app):
    app.add_directive("wideml-api", WidemlApi)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
