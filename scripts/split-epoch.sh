#!/bin/bash
# One-off rewrite (issue 21): epoch.X -> pipeline/statedir/epochdir.X in the given Go files.
P="Batch Claim Config CurrentEpoch DefaultIndexBudget DefaultPrepareAt ErrSplit FeaturePlan FeaturePlanning Info NewPipeline NewStore Pipeline SampleFunc Split Store StoreOption WithIndexBudget WithNumNodes WithState ErrEpochNotDone ErrUnknownEpoch ErrClosed ErrNoCurrent ErrNotCurrent ErrAlreadyPreparing"
S="ConflictError Contents ErrBusy ErrGraphMismatch ErrPrune Leftover MissingError State FieldGraph FieldTrain FieldFanouts FieldSeed FieldReplace FieldRank FieldWorldSize FieldCompress FieldEdgeIDs CurrentName ConfigName"
E="ErrCorrupt FormatVersion Identity ManifestName Read TrainSet TrainSetOf Write WriteOptions StepMkdir StepWrite StepInstall StepInstalled"
for f in "$@"; do
  perl -pi -e 's/\bepoch\.StateConfig\b/statedir.Config/g; s/\bepoch\.MergeStateConfig\b/statedir.MergeConfig/g; s/\bepoch\.ErrNotPrepared\b/pipeline.ErrNotPrepared/g' "$f"
  for id in $P; do perl -pi -e 's/\bepoch\.'$id'\b/pipeline.'$id'/g' "$f"; done
  for id in $S; do perl -pi -e 's/\bepoch\.'$id'\b/statedir.'$id'/g' "$f"; done
  for id in $E; do perl -pi -e 's/\bepoch\.'$id'\b/epochdir.'$id'/g' "$f"; done
done
