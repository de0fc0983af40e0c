(** Extraction of the maps to OCaml (formal/extraction/maps.ml); the driver
    formal/extraction/driver.ml reads queries on stdin and prints the exact rationals. *)
From Coq Require Import Extraction ExtrOcamlBasic ExtrOcamlNatInt QArith List.
From OWFormal Require Import Maps.
Extraction Language OCaml.
Definition score_query (capped private : bool) (L J : nat) (top : Q) (cands : list (Q * list Q * list Q)) : Q :=
  score_sensitivity_q (map (fun c => fst (fst c)) cands) (map (fun c => snd (fst c)) cands)
    (map (fun _ => score_moves capped private L J) cands)
    (map (fun c => score_bounds top (snd c) L J) cands).
Extraction "extraction/maps.ml" hier_l1_map hier_l2_map zcdp_map tree_l2_map expsel_map tree_em_map privtree_map
  noisy_size_map occupancy_map identity_map adaptive_map adaptive_zcdp_main score_query Qred kind_of.
