"""The cruise controllers: a PI law on the speed error, and a predictive one that previews the road and
coasts where it gives the speed back; pure, and stepped by the loop's fixed period."""
