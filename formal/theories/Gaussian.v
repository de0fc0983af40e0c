(** Discrete Gaussian noise and zCDP (docs/proofs/gaussian_counts.rst, zcdp_schedules.rst).

    The l2 sensitivities are proved (Hist.v, Vec.v); the Renyi-divergence facts about the
    discrete Gaussian and zCDP's closure properties are beyond the standard library (they need
    sums of series over Z^k and Renyi divergences of every order) and are the named axioms
    below, each with its citation (formal/ASSUMPTIONS.md). *)
From Coq Require Import Reals Lra Lia List ZArith.
From OWFormal Require Import Sums Neighbours Hist Laplace Vec.
Import ListNotations.
Open Scope R_scope.

(** Probability laws on a type, their Kleisli composition, zCDP between two laws. *)
Parameter Law : Type -> Type.
Parameter bind : forall {O1 O2 : Type}, Law O1 -> (O1 -> Law O2) -> Law O2.
Parameter zcdp_close : forall {O : Type}, R -> Law O -> Law O -> Prop.

(** [dgauss_vec ss u]: the law of [u + N], [N_i ~ N_Z(0, s_i^2)] independent. *)
Parameter dgauss_vec : list R -> list R -> Law (list Z).

Fixpoint wl2sq (ss : list R) (u v : list R) : R :=
  match ss, u, v with
  | s :: ss', a :: u', b :: v' => (a - b) ^ 2 / s ^ 2 + wl2sq ss' u' v'
  | _, _, _ => 0
  end.

(** Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy", NeurIPS 2020,
    Proposition 5 / Theorem 14 (multivariate, independent coordinates): the discrete Gaussian
    mechanism with l2 sensitivity [Delta] and scales [s] is [Delta^2 / 2]-zCDP, here in the
    weighted form [sum_i (u_i - v_i)^2 / s_i^2 / 2]. *)
Axiom cks20_discrete_gaussian_zcdp : forall ss u v,
  Forall (fun s => 0 < s) ss -> length u = length ss -> length v = length ss ->
  zcdp_close (wl2sq ss u v / 2) (dgauss_vec ss u) (dgauss_vec ss v).

(** Bun and Steinke, "Concentrated Differential Privacy", TCC 2016, Lemma 1.8
    (post-processing) and Lemma 2.3 (adaptive composition); monotonicity in [rho] is immediate
    from the definition. *)
Axiom zcdp_postprocessing : forall {O1 O2 : Type} rho (P Q : Law O1) (k : O1 -> Law O2),
  zcdp_close rho P Q -> zcdp_close rho (bind P k) (bind Q k).
Axiom zcdp_composition : forall {O1 O2 : Type} r1 r2 (P Q : Law O1) (k k' : O1 -> Law O2),
  zcdp_close r1 P Q -> (forall a, zcdp_close r2 (k a) (k' a)) -> zcdp_close (r1 + r2) (bind P k) (bind Q k').
Axiom zcdp_mono : forall {O : Type} r r' (P Q : Law O), r <= r' -> zcdp_close r P Q -> zcdp_close r' P Q.

(** ---- the dyadic counts in [l2sq(s)] with discrete Gaussian noise ---- *)
Section Dyadic.
Variable A : Type.

Definition count_vecR rr levels (xs : list A) : list R := map IZR (count_vec A rr levels xs).

Lemma wl2sq_app s1 s2 u1 u2 v1 v2 :
  length s1 = length u1 -> length s1 = length v1 ->
  wl2sq (s1 ++ s2) (u1 ++ u2) (v1 ++ v2) = wl2sq s1 u1 v1 + wl2sq s2 u2 v2.
Proof.
  revert u1 v1. induction s1 as [|s s1 IH]; intros u1 v1 H1 H2.
  - destruct u1, v1; try discriminate. simpl. lra.
  - destruct u1 as [|a u1], v1 as [|b v1]; try discriminate. simpl. rewrite IH by (simpl in *; lia). lra.
Qed.

Lemma wl2sq_level (L : nlevel A) xs ys : 0 < scale A L ->
  wl2sq (repeat (scale A L) (length (ncells A L))) (map IZR (level_vec A L xs)) (map IZR (level_vec A L ys))
  = / (scale A L) ^ 2 * l2sq A (ncells A L) (ncell A L) xs ys.
Proof.
  intros Hs. unfold level_vec, l2sq, cR. induction (ncells A L) as [|b bs IH]; cbn [map repeat length wl2sq sumR].
  - lra.
  - rewrite IH, <- !INR_IZR_INZ. unfold Rdiv. ring.
Qed.

Lemma wl2sq_levels levels xs ys :
  Forall (fun L => 0 < scale A L) levels ->
  wl2sq (flat_map (fun L => repeat (scale A L) (length (ncells A L))) levels)
      (map IZR (flat_map (fun L => level_vec A L xs) levels)) (map IZR (flat_map (fun L => level_vec A L ys) levels))
  = sumR levels (fun L => / (scale A L) ^ 2 * l2sq A (ncells A L) (ncell A L) xs ys).
Proof.
  induction levels as [|L t IH]; intros H; simpl; [reflexivity|].
  inversion H; subst. rewrite !map_app.
  rewrite wl2sq_app; [|rewrite repeat_length; unfold level_vec; rewrite !map_length; reflexivity
                     |rewrite repeat_length; unfold level_vec; rewrite !map_length; reflexivity].
  rewrite wl2sq_level, IH; auto.
Qed.

Definition as_level2 (L : nlevel A) : level A := {| weight := / (scale A L) ^ 2; cell := ncell A L; cells := ncells A L |}.

(** [make_dyadic_counts(..., output_metric="l2sq") >> make_tree_gaussian]: zCDP with
    [rho = m^2 sum_{j>=1} 1/s_j^2] per [m] replacements ([2 m^2 sum / 2]), or
    [k^2 (sum_{j>=0} 1/s_j^2) / 2] without a public size; the pruned traversal is a
    post-processing (a kernel from the complete noisy tree). *)
Theorem tree_gaussian_zcdp k n d rr s0 levels xs ys (g : list Z -> Law (list Z)) :
  (rr = true -> 0 < s0) -> Forall (fun L => 0 < scale A L) levels ->
  (forall L, In L levels -> NoDup (ncells A L)) -> close k n d xs ys ->
  zcdp_close (INR (whole k n d) ^ 2 *
                (match n with Some _ => 2 * sumR levels (fun L => / (scale A L) ^ 2)
                         | None => sumR levels (fun L => / (scale A L) ^ 2) + (if rr then / s0 ^ 2 else 0) end) / 2)
    (bind (dgauss_vec (scale_vec A rr s0 levels) (count_vecR rr levels xs)) g)
    (bind (dgauss_vec (scale_vec A rr s0 levels) (count_vecR rr levels ys)) g).
Proof.
  intros H0 H HN Hc. apply zcdp_postprocessing.
  assert (Hpos : Forall (fun s => 0 < s) (scale_vec A rr s0 levels)).
  { unfold scale_vec. apply Forall_app. split.
    - destruct rr; [constructor; [apply H0; reflexivity|constructor]|constructor].
    - apply Forall_forall. intros s Hs. apply in_flat_map in Hs. destruct Hs as (L & HL & Hs).
      apply repeat_spec in Hs. subst. rewrite Forall_forall in H. apply H, HL. }
  assert (Hlen : forall zs, length (count_vecR rr levels zs) = length (scale_vec A rr s0 levels)).
  { intros zs. unfold count_vecR, count_vec, scale_vec. rewrite map_length, !app_length, (flat_map_length_vec A levels zs).
    destruct rr; reflexivity. }
  eapply zcdp_mono; [|apply cks20_discrete_gaussian_zcdp; [exact Hpos|apply Hlen|apply Hlen]].
  unfold Rdiv. apply Rmult_le_compat_r; [lra|].
  assert (Hw : wl2sq (scale_vec A rr s0 levels) (count_vecR rr levels xs) (count_vecR rr levels ys)
             = hier_l2sq A (if rr then / s0 ^ 2 else 0) (map as_level2 levels) xs ys).
  { unfold scale_vec, count_vecR, count_vec, hier_l2sq. rewrite map_app, sumR_map.
    unfold as_level2; cbn [weight cells cell].
    destruct rr; cbn [app map wl2sq].
    - rewrite wl2sq_levels by exact H. rewrite <- !INR_IZR_INZ. unfold Rdiv. ring.
    - rewrite wl2sq_levels by exact H. cbn [length]. ring. }
  rewrite Hw.
  eapply Rle_trans; [apply hier_l2sq_stability; [| |exact Hc]|].
  - destruct rr; [left; apply Rinv_0_lt_compat, pow_lt, H0; reflexivity|lra].
  - intros L HL. apply in_map_iff in HL. destruct HL as (L' & <- & HL'). split.
    + left. apply Rinv_0_lt_compat, pow_lt. rewrite Forall_forall in H. apply H, HL'.
    + apply HN, HL'.
  - rewrite sumR_map. simpl. lra.
Qed.
End Dyadic.

(** ---- tree counts in [l2sq(s)] (make_tree_counts(..., output_metric="l2sq") >>
    make_tree_count_gaussian): the pair value [P] ---- *)
Section TreeL2.
Variable anc : nat -> list nat.   (* the ancestors of a leaf, itself and the root included *)
Variable nodes : list nat.        (* every node of the tree *)
Variable w : nat -> R.            (* 1 / s_{depth v}^2 *)
Hypothesis w_nonneg : forall v, 0 <= w v.

Definition tree_F (xs : list nat) (v : nat) : R := F nat nat (anc_ind anc) xs v.

Theorem tree_count_l2sq k n d (xs ys : list nat) (P Q0 : R) :
  0 <= P -> 0 <= Q0 ->
  (forall p q, nl2 nat nodes w (fun v => anc_ind anc p v - anc_ind anc q v) <= P) ->
  (forall p, nl2 nat nodes w (anc_ind anc p) <= Q0) ->
  close k n d xs ys ->
  nl2 nat nodes w (fun v => tree_F xs v - tree_F ys v)
    <= match n with Some _ => INR (whole k n d) ^ 2 * P | None => INR d ^ 2 * Q0 end.
Proof. intros. apply vec_l2_stability; auto. Qed.

Lemma wl2sq_nodes (ss : list R) xs ys :
  length ss = length nodes -> Forall (fun s => 0 < s) ss ->
  (forall i v s, nth_error nodes i = Some v -> nth_error ss i = Some s -> w v = / s ^ 2) ->
  wl2sq ss (map (tree_F xs) nodes) (map (tree_F ys) nodes) = nl2 nat nodes w (fun v => tree_F xs v - tree_F ys v).
Proof.
  unfold nl2. revert ss. induction nodes as [|v vs IH]; intros ss Hl Hp Hw; destruct ss as [|s ss]; try discriminate.
  - reflexivity.
  - cbn [map wl2sq sumR]. inversion Hp; subst. rewrite (Hw 0%nat v s eq_refl eq_refl).
    rewrite IH; [unfold Rdiv; ring|simpl in Hl; lia|auto|].
    intros i v' s' Hi1 Hi2. apply (Hw (S i)); auto.
Qed.

Theorem tree_count_gaussian_zcdp k n d (ss : list R) xs ys (P Q0 : R) :
  length ss = length nodes -> Forall (fun s => 0 < s) ss ->
  (forall i v s, nth_error nodes i = Some v -> nth_error ss i = Some s -> w v = / s ^ 2) ->
  0 <= P -> 0 <= Q0 ->
  (forall p q, nl2 nat nodes w (fun v => anc_ind anc p v - anc_ind anc q v) <= P) ->
  (forall p, nl2 nat nodes w (anc_ind anc p) <= Q0) ->
  close k n d xs ys ->
  zcdp_close ((match n with Some _ => INR (whole k n d) ^ 2 * P | None => INR d ^ 2 * Q0 end) / 2)
    (dgauss_vec ss (map (tree_F xs) nodes)) (dgauss_vec ss (map (tree_F ys) nodes)).
Proof.
  intros Hl Hp Hw HP HQ H1 H2 Hc.
  eapply zcdp_mono; [|apply cks20_discrete_gaussian_zcdp; [exact Hp|rewrite map_length; auto|rewrite map_length; auto]].
  unfold Rdiv. apply Rmult_le_compat_r; [lra|]. rewrite wl2sq_nodes by auto.
  apply tree_count_l2sq; auto.
Qed.
End TreeL2.
