(* Print Assumptions of every final theorem (one block per proof page); the build diffs the
   output against assumptions.baseline (make, formal/Makefile.local). *)
From OWFormal Require Import Sums Neighbours Hist DP Laplace Expo Vec Gaussian Scores Mechanisms PrivTree Maps.
Locate Hist.hier_l1_stability.
Print Assumptions Hist.hier_l1_stability.
Locate Maps.hier_l1_map_sound.
Print Assumptions Maps.hier_l1_map_sound.
Locate Laplace.tree_laplace_dp.
Print Assumptions Laplace.tree_laplace_dp.
Locate Laplace.pruned_tree_laplace_dp.
Print Assumptions Laplace.pruned_tree_laplace_dp.
Locate DP.postprocessing.
Print Assumptions DP.postprocessing.
Locate DP.composition.
Print Assumptions DP.composition.
Locate DP.group_privacy_close.
Print Assumptions DP.group_privacy_close.
Locate Mechanisms.noisy_size_dp.
Print Assumptions Mechanisms.noisy_size_dp.
Locate Hist.row_count_stability.
Print Assumptions Hist.row_count_stability.
Locate Hist.rowwise_stability.
Print Assumptions Hist.rowwise_stability.
Locate Hist.deal_stability.
Print Assumptions Hist.deal_stability.
Locate Hist.monotone_stability.
Print Assumptions Hist.monotone_stability.
Locate Hist.occupancy_unit_monotone.
Print Assumptions Hist.occupancy_unit_monotone.
Locate Hist.capped_counts_unit_monotone.
Print Assumptions Hist.capped_counts_unit_monotone.
Locate Scores.score_map_sound.
Print Assumptions Scores.score_map_sound.
Locate Hist.split_order_invariance.
Print Assumptions Hist.split_order_invariance.
Locate Expo.exponential_selection_dp.
Print Assumptions Expo.exponential_selection_dp.
Locate Mechanisms.selection_calibration.
Print Assumptions Mechanisms.selection_calibration.
Locate Maps.expsel_map_sound.
Print Assumptions Maps.expsel_map_sound.
Locate Mechanisms.adaptive_dp.
Print Assumptions Mechanisms.adaptive_dp.
Locate Mechanisms.adaptive_budget.
Print Assumptions Mechanisms.adaptive_budget.
Locate Maps.main_unit_bounds.
Print Assumptions Maps.main_unit_bounds.
Locate PrivTree.privtree_dp.
Print Assumptions PrivTree.privtree_dp.
Locate Maps.privtree_map_sound.
Print Assumptions Maps.privtree_map_sound.
Locate Mechanisms.tree_em_dp.
Print Assumptions Mechanisms.tree_em_dp.
Locate Maps.tree_em_map_sound.
Print Assumptions Maps.tree_em_map_sound.
Locate PrivTree.nn_histogram_dp.
Print Assumptions PrivTree.nn_histogram_dp.
Locate Hist.hier_l2sq_stability.
Print Assumptions Hist.hier_l2sq_stability.
Locate Maps.hier_l2_map_sound.
Print Assumptions Maps.hier_l2_map_sound.
Locate Gaussian.tree_gaussian_zcdp.
Print Assumptions Gaussian.tree_gaussian_zcdp.
Locate Gaussian.tree_count_gaussian_zcdp.
Print Assumptions Gaussian.tree_count_gaussian_zcdp.
Locate PrivTree.zcdp_schedule_budget.
Print Assumptions PrivTree.zcdp_schedule_budget.
