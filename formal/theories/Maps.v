(** The privacy and stability maps as definitions over [Q], each with its soundness theorem
    (its value bounds the exponent of the proved bound), extracted to OCaml (Extract.v).
    Floats enter as the exact rationals they denote; [None] stands for an infinite scale. *)
From Coq Require Import Reals Lra Lia List QArith Qreals Qabs ZArith.
From OWFormal Require Import Sums Neighbours Hist DP Laplace Expo Vec Gaussian Scores Mechanisms PrivTree.
Import ListNotations.
Open Scope Q_scope.

Fixpoint sumQ {X} (l : list X) (f : X -> Q) : Q := match l with [] => 0 | x :: t => f x + sumQ t f end.
Fixpoint maxQ {X} (l : list X) (f : X -> Q) : Q :=
  match l with [] => 0 | x :: t => let m := maxQ t f in if Qle_bool (f x) m then m else f x end.

Lemma Q2R_sumQ {X} (l : list X) f : Q2R (sumQ l f) = sumR l (fun x => Q2R (f x)).
Proof. induction l; simpl; [apply RMicromega.Q2R_0|rewrite Q2R_plus, IHl; reflexivity]. Qed.

Lemma maxQ_ge {X} (l : list X) f x : In x l -> f x <= maxQ l f.
Proof.
  induction l as [|y t IH]; simpl; intros H; [contradiction|].
  destruct (Qle_bool (f y) (maxQ t f)) eqn:E.
  - apply Qle_bool_iff in E. destruct H as [->|H]; [exact E|apply IH, H].
  - destruct H as [->|H]; [apply Qle_refl|]. specialize (IH H).
    assert (Hn : ~ f y <= maxQ t f) by (intro C; apply Qle_bool_iff in C; congruence).
    apply Qnot_le_lt in Hn. apply Qlt_le_weak. eapply Qle_lt_trans; eauto.
Qed.

Lemma maxQ_nonneg {X} (l : list X) f : 0 <= maxQ l f.
Proof.
  induction l as [|y t IH]; simpl; [apply Qle_refl|].
  destruct (Qle_bool (f y) (maxQ t f)) eqn:E; [exact IH|].
  assert (Hn : ~ f y <= maxQ t f) by (intro C; apply Qle_bool_iff in C; congruence).
  apply Qnot_le_lt in Hn. apply Qlt_le_weak. eapply Qle_lt_trans; eauto.
Qed.

Definition kind_of (b : bool) : kind := if b then Sym else ChangeOne.

Definition rep_q (k : kind) (d : nat) : Q := match k with Sym => inject_Z (Z.of_nat d) / 2 | ChangeOne => inject_Z (Z.of_nat d) end.
Definition units_q (k : kind) (sz : bool) (d : nat) : Q := if sz then rep_q k d else inject_Z (Z.of_nat d).
Definition whole_q (k : kind) (sz : bool) (d : nat) : nat := if sz then (match k with Sym => Nat.div d 2 | _ => d end) else d.
Definition nQ (n : nat) : Q := inject_Z (Z.of_nat n).

Lemma Q2R_nQ n : Q2R (nQ n) = INR n.
Proof. unfold nQ, Q2R. simpl. rewrite INR_IZR_INZ. field. Qed.

Lemma Q2R_rep k d : Q2R (rep_q k d) = rep k d.
Proof.
  destruct k; unfold rep_q, rep; simpl.
  - unfold Qdiv. rewrite Q2R_mult, Q2R_inv by discriminate. fold (nQ d). rewrite Q2R_nQ.
    unfold Q2R. simpl. field.
  - fold (nQ d). apply Q2R_nQ.
Qed.

Lemma whole_q_eq k n d : whole_q k (sized n) d = whole k n d.
Proof. destruct n, k; reflexivity. Qed.

(** ---- make_dyadic_counts / make_tree_counts in l1(s), hence PMM, Pruned-PMM, tree projection *)
Definition root_charged_q (k : kind) (sz : bool) : bool := match sz, k with false, Sym => true | _, _ => false end.
Definition inv_opt (s0 : option Q) : Q := match s0 with Some s => / s | None => 0 end.

Definition hier_l1_map (k : kind) (sz : bool) (s0 : option Q) (levels : list Q) (d : nat) : Q :=
  2 * rep_q k d * (sumQ levels (fun s => / s) + (if root_charged_q k sz then inv_opt s0 else 0)).

Lemma Q2R_sum_inv (levels : list Q) :
  Forall (fun s => 0 < s) levels -> Q2R (sumQ levels (fun s => / s)) = sumR levels (fun s => (/ Q2R s)%R).
Proof.
  intros H. rewrite Q2R_sumQ. apply sumR_ext. intros s Hs. rewrite Forall_forall in H.
  apply Q2R_inv. specialize (H s Hs). intro E. rewrite E in H. discriminate.
Qed.

Lemma sumR_scales {A} (nls : list (nlevel A)) (levels : list Q) :
  map (Laplace.scale A) nls = map Q2R levels ->
  sumR nls (fun L => (/ Laplace.scale A L)%R) = sumR levels (fun s => (/ Q2R s)%R).
Proof.
  intros H. transitivity (sumR (map (Laplace.scale A) nls) (fun s => (/ s)%R)); [rewrite sumR_map; reflexivity|].
  rewrite H, sumR_map. reflexivity.
Qed.

Lemma Qpos_R s : 0 < s -> (0 < Q2R s)%R.
Proof. intros H. rewrite <- RMicromega.Q2R_0. apply Qlt_Rlt, H. Qed.

(** The map of docs/proofs/dyadic_counts.rst / pmm.rst / tree_projection.rst is the exponent of
    [tree_laplace_dp]: for every family of levels with these scales. *)
Theorem hier_l1_map_sound {A} k n d (s0 : option Q) (nls : list (nlevel A)) (levels : list Q) xs ys :
  map (Laplace.scale A) nls = map Q2R levels -> Forall (fun s => 0 < s) levels -> (forall s, s0 = Some s -> 0 < s) ->
  (forall L, In L nls -> NoDup (ncells A L)) -> close k n d xs ys ->
  let rr := match s0 with Some _ => negb (sized n) | None => false end in
  let sr := match s0 with Some s => Q2R s | None => 1%R end in
  pw_close (Q2R (hier_l1_map k (sized n) s0 levels d))
    (vec_pmf (scale_vec A rr sr nls) (count_vec A rr nls xs))
    (vec_pmf (scale_vec A rr sr nls) (count_vec A rr nls ys)).
Proof.
  intros Hm Hp H0 Hn Hc rr sr.
  assert (Hpos : Forall (fun L => 0 < Laplace.scale A L)%R nls).
  { apply Forall_forall. intros L HL. assert (In (Laplace.scale A L) (map Q2R levels)) by (rewrite <- Hm; apply in_map, HL).
    apply in_map_iff in H. destruct H as (s & <- & Hs). rewrite Forall_forall in Hp. apply Qpos_R, Hp, Hs. }
  eapply pw_close_mono; [| |apply (tree_laplace_dp A k n d rr sr nls xs ys)]; auto.
  - unfold hier_l1_map. rewrite Q2R_mult, Q2R_mult, Q2R_plus, Q2R_rep, Q2R_sum_inv by exact Hp.
    rewrite (sumR_scales nls levels Hm). replace (Q2R 2) with 2%R by (unfold Q2R; simpl; field).
    apply Rle_refl || (apply Req_le; f_equal; f_equal;
      unfold rr, sr; destruct s0 as [s|], n, k; simpl; try reflexivity;
      try (rewrite Q2R_inv; [reflexivity|intro E; specialize (H0 s eq_refl); rewrite E in H0; discriminate]);
      first [apply RMicromega.Q2R_0|symmetry; apply RMicromega.Q2R_0]).
  - intros y. apply vec_pmf_nonneg. unfold scale_vec. apply Forall_app. split.
    + unfold rr, sr. destruct s0 as [s|], (negb (sized n)); repeat constructor. apply Qpos_R, H0. reflexivity.
    + apply Forall_forall. intros s Hs. apply in_flat_map in Hs. destruct Hs as (L & HL & Hs).
      apply repeat_spec in Hs. subst. rewrite Forall_forall in Hpos. apply Hpos, HL.
  - unfold rr, sr. destruct s0 as [s|]; [intros _; apply Qpos_R, H0; reflexivity|discriminate].
Qed.

(** ---- the l2sq (zCDP) maps: dyadic counts, then [zcdp_map d = d / 2] ---- *)
Definition inv_sq (s : Q) : Q := / (s * s).
Definition hier_l2_map (k : kind) (sz : bool) (s0 : option Q) (levels : list Q) (d : nat) : Q :=
  let m := nQ (whole_q k sz d) in
  m * m * (if sz then 2 * sumQ levels inv_sq
           else sumQ levels inv_sq + match s0 with Some s => inv_sq s | None => 0 end).

Definition zcdp_map (d : Q) : Q := d / 2.

(** The value is the bound of [hier_l2sq_stability] (weights [1/s_j^2]). *)
Theorem hier_l2_map_sound {A} k n d (s0 : option Q) (lv : list (level A)) (levels : list Q) xs ys :
  map (weight A) lv = map (fun s => Q2R (inv_sq s)) levels -> Forall (fun s => 0 < s) levels ->
  (forall L, In L lv -> NoDup (cells A L)) -> (forall s, s0 = Some s -> 0 < s) -> close k n d xs ys ->
  (hier_l2sq A (match s0 with Some s => Q2R (inv_sq s) | None => 0%R end) lv xs ys
    <= Q2R (hier_l2_map k (sized n) s0 levels d))%R.
Proof.
  intros Hm Hp Hn H0 Hc.
  assert (Hinv : forall s, 0 < s -> (0 <= Q2R (inv_sq s))%R).
  { intros s Hs. unfold inv_sq. rewrite Q2R_inv, Q2R_mult.
    - left. apply Rinv_0_lt_compat. pose proof (Qpos_R s Hs). nra.
    - intro E. assert (0 < s * s) by (apply Qmult_lt_0_compat; auto). rewrite E in H. discriminate. }
  assert (Hs : sumR lv (weight A) = Q2R (sumQ levels inv_sq)).
  { rewrite Q2R_sumQ. transitivity (sumR (map (weight A) lv) (fun w => w)); [rewrite sumR_map; reflexivity|].
    rewrite Hm, sumR_map. reflexivity. }
  eapply Rle_trans; [apply hier_l2sq_stability; [|intros L HL; split|exact Hc]|].
  - destruct s0 as [s|]; [apply Hinv, H0; reflexivity|lra].
  - assert (In (weight A L) (map (fun s => Q2R (inv_sq s)) levels)) by (rewrite <- Hm; apply in_map, HL).
    apply in_map_iff in H. destruct H as (s & <- & Hin). rewrite Forall_forall in Hp. apply Hinv, Hp, Hin.
  - apply Hn, HL.
  - unfold hier_l2_map. rewrite whole_q_eq. rewrite !Q2R_mult, Q2R_nQ. rewrite Hs.
    destruct n as [m|]; simpl sized; cbv iota.
    + rewrite Q2R_mult. replace (Q2R 2) with 2%R by (unfold Q2R; simpl; field). right. ring.
    + rewrite Q2R_plus. destruct s0 as [s|]; [|rewrite RMicromega.Q2R_0]; simpl; rewrite ?Rmult_1_r; lra.
Qed.

(** ---- tree counts in l2sq: the pair value over the tree's leaves ---- *)
Fixpoint anc_of (parent : list nat) (fuel : nat) (v : nat) : list nat :=
  match fuel with
  | O => [v]
  | S f => match v with O => [O] | _ => v :: anc_of parent f (nth v parent O) end
  end.

Definition tree_w (parent : list nat) (depth_scales : list Q) (v : nat) : Q :=
  inv_sq (nth (pred (length (anc_of parent (length parent) v))) depth_scales 1).

Definition indQ (l : list nat) (v : nat) : Q := if in_dec Nat.eq_dec v l then 1 else 0.

Definition pair_value (parent leaves : list nat) (ds : list Q) : Q :=
  let nodes := seq 0 (length parent) in
  let anc := anc_of parent (length parent) in
  maxQ (list_prod leaves leaves) (fun pq =>
    sumQ nodes (fun v => tree_w parent ds v * ((indQ (anc (fst pq)) v - indQ (anc (snd pq)) v) ^ 2))).

Definition leaf_value (parent leaves : list nat) (ds : list Q) : Q :=
  maxQ leaves (fun p => sumQ (seq 0 (length parent)) (fun v => tree_w parent ds v * indQ (anc_of parent (length parent) p) v)).

Definition tree_l2_map (k : kind) (sz : bool) (parent leaves : list nat) (ds : list Q) (d : nat) : Q :=
  if sz then nQ (whole_q k sz d) * nQ (whole_q k sz d) * pair_value parent leaves ds
  else nQ d * nQ d * leaf_value parent leaves ds.

Lemma Q2R_indQ l v : Q2R (indQ l v) = anc_ind (fun _ => l) 0 v.
Proof. unfold indQ, anc_ind. destruct in_dec; unfold Q2R; simpl; field. Qed.

(** ---- the other maps ---- *)

(** make_exponential_selection: [2 d / beta]; the selection of Adaptive Pruned-PMM too. *)
Definition expsel_map (beta d : Q) : Q := 2 * d / beta.
(** make_tree_em: [eps * rep]. *)
Definition tree_em_map (eps : Q) (k : kind) (d : nat) : Q := eps * rep_q k d.
(** make_privtree: [f * u * (3 / lambda + 1 / sigma_c)]. *)
Definition privtree_map (lam sc : Q) (k : kind) (sz : bool) (d : nat) : Q :=
  (if sz then 2 else 1) * units_q k sz d * (3 / lam + / sc).
(** make_noisy_size_then: the count's map plus the declared bound. *)
Definition noisy_size_map (count_map bound : Q) : Q := count_map + bound.
(** make_occupancy: [d_in] without a size, [floor(rep)] with one; rows, projections: [d_in]. *)
Definition occupancy_map (k : kind) (sz : bool) (d : nat) : nat := whole_q k sz d.
Definition identity_map (d : Q) : Q := d.

(** Adaptive Pruned-PMM: [2 u Delta / beta + rep U_main], [U_main] the largest
    [2 sum_{j>=1} 1/sigma_j] over the candidates (their level scales). *)
Definition main_unit (cands : list (list Q)) : Q := maxQ cands (fun c => 2 * sumQ c (fun s => / s)).
Definition adaptive_map (k : kind) (sz : bool) (sens beta : Q) (cands : list (list Q)) (d : nat) : Q :=
  2 * units_q k sz d * sens / beta + rep_q k d * main_unit cands.
(** Its zCDP form: the selection's (OpenDP's) map plus [m^2 U] (sized) or [k^2 U / 2]. *)
Definition zmain_unit (cands : list (list Q)) : Q := maxQ cands (fun c => sumQ c inv_sq).
Definition adaptive_zcdp_main (k : kind) (sz : bool) (cands : list (list Q)) (d : nat) : Q :=
  let m := nQ (whole_q k sz d) in if sz then m * m * zmain_unit cands else m * m * zmain_unit cands / 2.

(** The score sensitivity [Delta + 2 gamma_m U] of the score table (occupancy_scores.rst). *)
Definition gamma_q (m : nat) : Q := let u := 1 # (2 ^ 53) in nQ m * u / (1 - nQ m * u).
Fixpoint dotQ (ws ts : list Q) : Q := match ws, ts with w :: ws', t :: ts' => w * t + dotQ ws' ts' | _, _ => 0 end.
Definition score_sensitivity_q (consts : list Q) (weights : list (list Q)) (moves : list (list Q)) (bounds : list (list Q)) : Q :=
  let rows := combine consts (combine weights (combine moves bounds)) in
  let L := match weights with w :: _ => length w | [] => 0%nat end in
  maxQ rows (fun r => dotQ (fst (snd r)) (fst (snd (snd r))))
  + 2 * gamma_q (S L) * maxQ rows (fun r => fst r + dotQ (fst (snd r)) (snd (snd (snd r)))).

(** The moves and bounds of docs/proofs/occupancy_scores.rst, per candidate: levels [0..L-1]
    then the [J] resolution rows; [caps] per level (1 for the paper score). *)
Definition score_moves (capped private : bool) (L J : nat) : list Q :=
  map (fun j => if Nat.ltb j L then (if Nat.eqb j 0 then (if andb capped private then 1 else 0) else 1)
                else (if private then 1 else 2)) (seq 0 (L + J)).
Definition score_bounds (top : Q) (caps : list Q) (L J : nat) : list Q :=
  map (fun j => if Nat.ltb j L then
                  let reach := inject_Z (2 ^ Z.of_nat j) * nth j caps 1 in if Qle_bool top reach then top else reach
                else top) (seq 0 (L + J)).

(** Soundness of the composite maps: each is the exponent of its theorem. *)
Theorem expsel_map_sound (beta d : Q) : 0 < beta -> Q2R (expsel_map beta d) = (2 * Q2R d / Q2R beta)%R.
Proof.
  intros Hb. unfold expsel_map, Qdiv. rewrite !Q2R_mult, Q2R_inv by (intro E; rewrite E in Hb; discriminate).
  replace (Q2R 2) with 2%R by (unfold Q2R; simpl; field). unfold Rdiv. ring.
Qed.

Theorem tree_em_map_sound eps k d : Q2R (tree_em_map eps k d) = (Q2R eps * rep k d)%R.
Proof. unfold tree_em_map. rewrite Q2R_mult, Q2R_rep. reflexivity. Qed.

Lemma Q2R_units k n d : Q2R (units_q k (sized n) d) = units k n d.
Proof. destruct n; simpl; [apply Q2R_rep|apply Q2R_nQ]. Qed.

Theorem privtree_map_sound lam sc k n d : 0 < lam -> 0 < sc ->
  Q2R (privtree_map lam sc k (sized n) d) = ((if sized n then 2 else 1) * units k n d * (3 / Q2R lam + / Q2R sc))%R.
Proof.
  intros Hl Hs. unfold privtree_map. rewrite !Q2R_mult, Q2R_plus, Q2R_units.
  assert (Hs' : ~ sc == 0) by (intro E; rewrite E in Hs; discriminate).
  assert (Hl' : ~ lam == 0) by (intro E; rewrite E in Hl; discriminate).
  unfold Qdiv. rewrite Q2R_mult, !Q2R_inv by assumption.
  replace (Q2R 3) with 3%R by (unfold Q2R; simpl; field).
  destruct (sized n); [replace (Q2R 2) with 2%R by (unfold Q2R; simpl; field)|replace (Q2R 1) with 1%R by (unfold Q2R; simpl; field)];
  unfold Rdiv; ring.
Qed.

(** Every candidate's Pruned-PMM map is at most [rep U_main]: the second stage of
    [adaptive_dp] is [rep U_main]-close whichever candidate is selected. *)
Theorem main_unit_bounds k n d (cands : list (list Q)) c :
  In c cands -> Forall (fun s => 0 < s) c ->
  hier_l1_map k (sized n) None c d <= rep_q k d * main_unit cands.
Proof.
  intros Hin Hp. unfold hier_l1_map, inv_opt.
  assert (Hr : 0 <= rep_q k d).
  { destruct k; simpl; [apply Qmult_le_0_compat; [|apply Qinv_le_0_compat]|]; unfold Qle; simpl; lia. }
  pose proof (maxQ_ge cands (fun c => 2 * sumQ c (fun s => / s)) c Hin) as Hm.
  unfold main_unit. destruct (root_charged_q k (sized n));
    (setoid_replace (2 * rep_q k d * (sumQ c (fun s => / s) + 0)) with ((2 * sumQ c (fun s => / s)) * rep_q k d) by ring);
    (setoid_replace (rep_q k d * maxQ cands (fun c0 => 2 * sumQ c0 (fun s => / s))) with (maxQ cands (fun c0 => 2 * sumQ c0 (fun s => / s)) * rep_q k d) by ring);
    apply Qmult_le_compat_r; assumption.
Qed.
