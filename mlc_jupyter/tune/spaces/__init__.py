"""The design spaces the tuner searches, as TVM groups its ``space_generator/``,
``schedule_rule/`` and ``postproc/``: which space each task gets (``choice.py``), the BLIS-like
matmul space (``matmul.py``), the direct-convolution space (``conv.py``) and the register check
both share (``register_fit.py``).
"""
