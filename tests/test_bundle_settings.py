"""
grading.json's `model` in the hidden bundle (src/grading/bundle.py): a size
that leaves a field out is refused with one line when the bundle is loaded,
before any test runs, rather than loaded and failing every regenerated
prediction test on a KeyError.
"""

import json

import pytest

from grading import bundle
from grading.bundle import BundleError


@pytest.mark.parametrize("missing", bundle.MODEL_FIELDS)
def test_a_model_without_one_of_its_fields_is_refused_in_one_line(tmp_path, missing):
    model = {name: 4 for name in bundle.MODEL_FIELDS if name != missing}
    (tmp_path / "grading.json").write_text(json.dumps({"model": model}), encoding="utf-8")
    with pytest.raises(BundleError) as refused:
        bundle.load_bundle(str(tmp_path))
    assert str(refused.value) == (f"{tmp_path / 'grading.json'}: 'model' must give each of n_layer, n_head, n_embd, "
                                  f"block_size, bottleneck_dim as a positive integer")
