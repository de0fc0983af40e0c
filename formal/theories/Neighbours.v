(** Data sets, the two input metrics and [rep] (docs/proofs/index.rst, "Data and neighbours").

    A data set is a list of records read as a multiset.  [d_Sym(x, x') <= d] holds iff
    [x = c + a] and [x' = c + b] as multisets with [|a| + |b| <= d]; [d_CO(x, x') <= d] iff the
    sizes agree and such a decomposition has [|a| <= d] (then [|a| = |b|]: change those rows). *)
From Coq Require Import Reals Lra Lia List Permutation.
Import ListNotations.
Open Scope R_scope.

Inductive kind := Sym | ChangeOne.

Section Data.
Variable A : Type.

Definition sym_le (d : nat) (xs ys : list A) : Prop :=
  exists c a b, Permutation xs (c ++ a) /\ Permutation ys (c ++ b) /\ (length a + length b <= d)%nat.

Definition co_le (d : nat) (xs ys : list A) : Prop :=
  length xs = length ys /\
  exists c a b, Permutation xs (c ++ a) /\ Permutation ys (c ++ b) /\ (length a <= d)%nat.

(** [close k n d xs ys]: both data sets are in the domain (size [n] when it is public) and they
    are within [d] in the metric [k] ([change_one_distance] needs a public size). *)
Definition close (k : kind) (n : option nat) (d : nat) (xs ys : list A) : Prop :=
  match n with Some m => length xs = m /\ length ys = m | None => True end /\
  match k with Sym => sym_le d xs ys | ChangeOne => n <> None /\ co_le d xs ys end.

End Data.

Arguments close {A}.

(** [rep(kind, d_in)] of the proof pages: [d_in / 2] or [d_in]. *)
Definition rep (k : kind) (d : nat) : R :=
  match k with Sym => INR d / 2 | ChangeOne => INR d end.

(** [nu]: the units of the score pages; replacements with a public size, records without. *)
Definition units (k : kind) (n : option nat) (d : nat) : R :=
  match n with Some _ => rep k d | None => INR d end.

Definition sized (n : option nat) : bool := match n with Some _ => true | None => false end.

(** Every pair of close data sets decomposes as [c + a], [c + b] with the following bounds. *)
Lemma close_decomp {A} k n d (xs ys : list A) :
  close k n d xs ys ->
  exists c a b, Permutation xs (c ++ a) /\ Permutation ys (c ++ b) /\
    INR (length a) + INR (length b) <= 2 * rep k d /\
    (n <> None -> length a = length b /\ INR (length a) <= rep k d) /\
    (n = None -> k = Sym /\ (length a + length b <= d)%nat) /\
    INR (length a) + INR (length b) <= (if sized n then 2 else 1) * units k n d.
Proof.
  intros [Hn Hk].
  destruct k.
  - destruct Hk as (c & a & b & Ha & Hb & Hd).
    exists c, a, b.
    assert (Hd' : INR (length a) + INR (length b) <= INR d) by (rewrite <- plus_INR; apply le_INR; exact Hd).
    assert (Hsz : n <> None -> length a = length b).
    { intros Hs. destruct n as [m|]; [|congruence].
      destruct Hn as [H1 H2]. apply Permutation_length in Ha, Hb. rewrite app_length in Ha, Hb. lia. }
    split; [exact Ha|]. split; [exact Hb|].
    split; [unfold rep; lra|].
    split; [intros Hs; specialize (Hsz Hs); split; [exact Hsz|]; unfold rep; rewrite Hsz in *; lra|].
    split; [intros _; split; [reflexivity|exact Hd]|].
    destruct n as [m|]; simpl; unfold rep; lra.
  - destruct Hk as [Hs [Hl (c & a & b & Ha & Hb & Hd)]].
    exists c, a, b.
    assert (Hab : length a = length b).
    { apply Permutation_length in Ha, Hb. rewrite app_length in Ha, Hb. lia. }
    assert (Hd' : INR (length a) <= INR d) by (apply le_INR; exact Hd).
    split; [exact Ha|]. split; [exact Hb|].
    split; [unfold rep; rewrite <- Hab; lra|].
    split; [intros _; split; [exact Hab|unfold rep; lra]|].
    split; [intros H; congruence|].
    destruct n as [m|]; [|congruence]. simpl. unfold rep. rewrite <- Hab. lra.
Qed.
