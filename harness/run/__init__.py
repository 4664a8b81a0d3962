"""A fuzz run: the search over histories, the plan of targets, executors (this process, local
processes, Dask), the one merge of their results, and the journal.

Imports crashcheck.harness.triage and below. It never renders a report and never parses a command line.
Inside, the arrows point one way (the import contract in pyproject.toml; each module's top says
what it owns), from the top:
  executor_choice  which executor --jobs/--dask ask for
  plan             run_plan: a plan's targets cut into units, run, merged into Results
  dask_executor, executors   where units run: Dask; this process, local worker processes
  batch            one unit of work (Share) and fuzz_batch, which runs its Search anywhere
  search, merge    one share's search (Search); joining shares into a target's bugs
  fix_checks       a fix proven on a bug's example checked on its other failing histories
  fold_proofs      each bug's fix applied to the other bugs' examples: what it removes may fold
  unmasking        after each batch, its lane's new bugs shrunk and fixed: its later histories unmasked
  history_shrink   a bug's history shrunk after the batches, within its share of the reserve
  strategies, found, results, journal, wire
                   the histories drawn; what the search says to Hypothesis; the typed results
                   (Stats, Progress, TargetResult, Results and the results file); the journal;
                   the Dask wire form
  config           Config, the lanes of batches, a target's budget
(docs/architecture.md.)
"""
