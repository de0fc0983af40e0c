(** Count vectors as sums of per-record vectors: the pairing arguments behind the tree maps
    (docs/proofs/gaussian_counts.rst: the tree l2sq pair value; tree_em.rst: the score
    sensitivity [d_T(i, j) / n]).  A record [p] adds [phi p] to the count vector [F]. *)
From Coq Require Import Reals Lra Lia List Permutation.
From OWFormal Require Import Sums Neighbours Hist.
Import ListNotations.
Open Scope R_scope.

Section Vec.
Variables A V : Type.
Variable phi : A -> V -> R.
Variable vs : list V.
Variable w : V -> R.
Hypothesis w_nonneg : forall v, 0 <= w v.

Definition F (xs : list A) (v : V) : R := sumR xs (fun x => phi x v).
Definition nl1 (h : V -> R) : R := sumR vs (fun v => w v * Rabs (h v)).
Definition nl2 (h : V -> R) : R := sumR vs (fun v => w v * (h v) ^ 2).

Lemma F_app l1' l2 v : F (l1' ++ l2) v = F l1' v + F l2 v.
Proof. unfold F. apply sumR_app. Qed.

Lemma F_perm l1' l2 v : Permutation l1' l2 -> F l1' v = F l2 v.
Proof. intros H. unfold F. induction H; simpl; lra. Qed.

Lemma diff_pairs (a b : list A) v : length a = length b ->
  F a v - F b v = sumR (combine a b) (fun pq => phi (fst pq) v - phi (snd pq) v).
Proof.
  revert b. induction a as [|x a IH]; intros [|y b] H; simpl in *; try discriminate; [unfold F; simpl; lra|].
  injection H as H. unfold F in *. simpl. rewrite <- IH by exact H. lra.
Qed.

Lemma nl1_sum {T} (terms : list T) (g : T -> V -> R) :
  nl1 (fun v => sumR terms (fun t => g t v)) <= sumR terms (fun t => nl1 (g t)).
Proof.
  unfold nl1. rewrite sumR_swap.
  apply sumR_le. intros v _. rewrite sumR_scal.
  apply Rmult_le_compat_l; [apply w_nonneg|apply sumR_abs].
Qed.

Lemma cauchy_schwarz_count {T} (terms : list T) (g : T -> R) :
  (sumR terms g) ^ 2 <= INR (length terms) * sumR terms (fun t => (g t) ^ 2).
Proof.
  induction terms as [|t ts IH]; [simpl; lra|].
  change (length (t :: ts)) with (S (length ts)). rewrite S_INR. cbn [sumR].
  assert (H2 : 2 * g t * sumR ts g <= INR (length ts) * g t ^ 2 + sumR ts (fun x => g x ^ 2)).
  { clear IH. induction ts as [|t' ts' IH']; [simpl; lra|].
    change (length (t' :: ts')) with (S (length ts')). rewrite S_INR. cbn [sumR].
    assert (2 * g t * g t' <= g t ^ 2 + g t' ^ 2) by (pose proof (pow2_ge_0 (g t - g t')); nra).
    replace (2 * g t * (g t' + sumR ts' g)) with (2 * g t * g t' + 2 * g t * sumR ts' g) by ring.
    replace ((INR (length ts') + 1) * g t ^ 2) with (INR (length ts') * g t ^ 2 + g t ^ 2) by ring.
    lra. }
  replace ((g t + sumR ts g) ^ 2) with (g t ^ 2 + 2 * g t * sumR ts g + sumR ts g ^ 2) by ring.
  replace ((INR (length ts) + 1) * (g t ^ 2 + sumR ts (fun t0 => g t0 ^ 2)))
    with (INR (length ts) * g t ^ 2 + INR (length ts) * sumR ts (fun t0 => g t0 ^ 2) + g t ^ 2 + sumR ts (fun t0 => g t0 ^ 2)) by ring.
  lra.
Qed.

Lemma nl2_sum {T} (terms : list T) (g : T -> V -> R) :
  nl2 (fun v => sumR terms (fun t => g t v)) <= INR (length terms) * sumR terms (fun t => nl2 (g t)).
Proof.
  unfold nl2. rewrite sumR_swap, <- sumR_scal.
  apply sumR_le. intros v _. rewrite sumR_scal.
  pose proof (cauchy_schwarz_count terms (fun t => g t v)). pose proof (w_nonneg v).
  replace (INR (length terms) * (w v * sumR terms (fun t => g t v ^ 2)))
    with (w v * (INR (length terms) * sumR terms (fun t => g t v ^ 2))) by ring.
  apply Rmult_le_compat_l; auto.
Qed.

Lemma nl1_nonneg h : 0 <= nl1 h.
Proof. apply sumR_nonneg. intros v _. apply Rmult_le_pos; [apply w_nonneg|apply Rabs_pos]. Qed.

Lemma nl2_nonneg h : 0 <= nl2 h.
Proof. apply sumR_nonneg. intros v _. apply Rmult_le_pos; [apply w_nonneg|apply pow2_ge_0]. Qed.

Lemma nl1_ext h h' : (forall v, h v = h' v) -> nl1 h = nl1 h'.
Proof. intros H. unfold nl1. apply sumR_ext. intros v _. rewrite H. reflexivity. Qed.

Lemma nl2_ext h h' : (forall v, h v = h' v) -> nl2 h = nl2 h'.
Proof. intros H. unfold nl2. apply sumR_ext. intros v _. rewrite H. reflexivity. Qed.

Lemma whole_ge k n d (a b : list A) :
  (n <> None -> length a = length b /\ INR (length a) <= rep k d) ->
  forall m, n = Some m -> (length a <= whole k n d)%nat.
Proof.
  intros Hs m ->. destruct (Hs ltac:(discriminate)) as [Hab Hr]. destruct k; simpl.
  - apply half_le. apply INR_le. rewrite plus_INR. unfold rep in Hr. lra.
  - apply INR_le. exact Hr.
Qed.

(** Replacements: the count vectors move by at most [m] pair differences ([m] = [whole]). *)
Theorem vec_l1_stability k n d xs ys (D1 D0 : R) :
  0 <= D1 -> 0 <= D0 -> (forall p q, nl1 (fun v => phi p v - phi q v) <= D1) -> (forall p, nl1 (phi p) <= D0) ->
  close k n d xs ys ->
  nl1 (fun v => F xs v - F ys v) <= match n with Some _ => INR (whole k n d) * D1 | None => INR d * D0 end.
Proof.
  intros HD1 HD0' H1 H0 Hc.
  destruct (close_decomp k n d xs ys Hc) as (c & a & b & Ha & Hb & _ & Hs & Hu & _).
  rewrite (nl1_ext _ (fun v => F a v - F b v)).
  2:{ intros v. rewrite (F_perm _ _ v Ha), (F_perm _ _ v Hb), !F_app. ring. }
  destruct n as [m|].
  - pose proof (whole_ge k (Some m) d a b Hs m eq_refl) as Hw.
    destruct (Hs ltac:(discriminate)) as [Hab _].
    rewrite (nl1_ext _ (fun v => sumR (combine a b) (fun pq => phi (fst pq) v - phi (snd pq) v)))
      by (intros v; apply diff_pairs, Hab).
    eapply Rle_trans; [apply nl1_sum|].
    eapply Rle_trans; [apply (sumR_le _ _ (fun _ => D1)); intros; apply H1|].
    rewrite sumR_const, combine_length, Hab, Nat.min_id. apply Rmult_le_compat_r; [exact HD1|].
    apply le_INR. rewrite <- Hab. exact Hw.
  - destruct (Hu eq_refl) as [_ Hd].
    rewrite (nl1_ext _ (fun v => sumR (map (fun x => (x, 1)) a ++ map (fun x => (x, -1)) b)
                                  (fun t => snd t * phi (fst t) v))).
    2:{ intros v. rewrite sumR_app, !sumR_map. unfold F. simpl.
        rewrite (sumR_ext a (fun x => 1 * phi x v) (fun x => phi x v)) by (intros; ring).
        rewrite sumR_scal. ring. }
    eapply Rle_trans; [apply nl1_sum|].
    eapply Rle_trans; [apply (sumR_le _ _ (fun _ => D0))|].
    + intros [x s] Hin. simpl. apply in_app_iff in Hin. destruct Hin as [Hin|Hin];
        apply in_map_iff in Hin; destruct Hin as (y & Heq & _); injection Heq as <- <-;
        [rewrite (nl1_ext _ (phi y)) by (intros; ring); apply H0|].
      unfold nl1. rewrite (sumR_ext _ _ (fun v => w v * Rabs (phi y v))); [apply H0|].
      intros v _. replace (-1 * phi y v) with (- phi y v) by ring. rewrite Rabs_Ropp. ring.
    + rewrite sumR_const, app_length, !map_length. apply Rmult_le_compat_r.
      * exact HD0'.
      * apply le_INR, Hd.
Qed.

Theorem vec_l2_stability k n d xs ys (D2 Q0 : R) :
  0 <= D2 -> 0 <= Q0 -> (forall p q, nl2 (fun v => phi p v - phi q v) <= D2) -> (forall p, nl2 (phi p) <= Q0) ->
  close k n d xs ys ->
  nl2 (fun v => F xs v - F ys v) <= match n with Some _ => INR (whole k n d) ^ 2 * D2 | None => INR d ^ 2 * Q0 end.
Proof.
  intros HD2 HQ0 H2 H0 Hc.
  destruct (close_decomp k n d xs ys Hc) as (c & a & b & Ha & Hb & _ & Hs & Hu & _).
  rewrite (nl2_ext _ (fun v => F a v - F b v)).
  2:{ intros v. rewrite (F_perm _ _ v Ha), (F_perm _ _ v Hb), !F_app. ring. }
  destruct n as [m|].
  - pose proof (whole_ge k (Some m) d a b Hs m eq_refl) as Hw.
    destruct (Hs ltac:(discriminate)) as [Hab _].
    rewrite (nl2_ext _ (fun v => sumR (combine a b) (fun pq => phi (fst pq) v - phi (snd pq) v)))
      by (intros v; apply diff_pairs, Hab).
    eapply Rle_trans; [apply nl2_sum|].
    rewrite combine_length, Hab, Nat.min_id.
    eapply Rle_trans.
    + apply Rmult_le_compat_l; [apply pos_INR|]. apply (sumR_le _ _ (fun _ => D2)). intros; apply H2.
    + rewrite sumR_const, combine_length, Hab, Nat.min_id.
      apply le_INR in Hw. rewrite Hab in Hw. pose proof (pos_INR (length b)).
      assert (INR (length b) * INR (length b) <= INR (whole k (Some m) d) ^ 2) by nra.
      replace (INR (length b) * (INR (length b) * D2)) with ((INR (length b) * INR (length b)) * D2) by ring.
      apply Rmult_le_compat_r; auto.
  - destruct (Hu eq_refl) as [_ Hd].
    rewrite (nl2_ext _ (fun v => sumR (map (fun x => (x, 1)) a ++ map (fun x => (x, -1)) b)
                                  (fun t => snd t * phi (fst t) v))).
    2:{ intros v. rewrite sumR_app, !sumR_map. unfold F. simpl.
        rewrite (sumR_ext a (fun x => 1 * phi x v) (fun x => phi x v)) by (intros; ring).
        rewrite sumR_scal. ring. }
    eapply Rle_trans; [apply nl2_sum|].
    set (T := map (fun x => (x, 1)) a ++ map (fun x => (x, -1)) b).
    assert (HT : INR (length T) <= INR d) by (apply le_INR; unfold T; rewrite app_length, !map_length; exact Hd).
    eapply Rle_trans.
    + apply Rmult_le_compat_l; [apply pos_INR|]. apply (sumR_le _ _ (fun _ => Q0)).
      intros [x s] Hin. simpl. unfold T in Hin. apply in_app_iff in Hin.
      unfold nl2. destruct Hin as [Hin|Hin];
        apply in_map_iff in Hin; destruct Hin as (y & Heq & _); injection Heq as <- <-;
        (rewrite (sumR_ext _ _ (fun v => w v * phi y v ^ 2)); [apply H0|intros v _; ring]).
    + rewrite sumR_const. pose proof (pos_INR (length T)).
      assert (INR (length T) * INR (length T) <= INR d ^ 2) by nra.
      replace (INR (length T) * (INR (length T) * Q0)) with ((INR (length T) * INR (length T)) * Q0) by ring.
      apply Rmult_le_compat_r; auto.
Qed.
End Vec.

(** Trees: a record is a leaf, its vector the indicator of its ancestors (itself included). *)
Definition anc_ind (anc : nat -> list nat) (p v : nat) : R :=
  if in_dec Nat.eq_dec v (anc p) then 1 else 0.
