"""The search's plug-ins into MetaSchedule, as TVM groups its own (``builder/``, ``runner/``,
``search_strategy/``, ``measure_callback/``): the in-process candidate builder
(``candidate_builder.py``) and runner (``runner.py``), the search strategy (``strategy.py``), the
callback that records and reports each round (``callback.py``), the state they share in one run
(``run_state.py``), the measuring threads (``threads.py``) and the measuring policy (``policy.py``,
no TVM). They know nothing of kernels, models or budgets beyond what the orchestration above
(``tune/kernel.py``, ``tune/whole_model.py``) hands them.
"""
