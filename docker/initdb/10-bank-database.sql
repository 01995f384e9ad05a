-- The sandbox bank keeps its own database next to the portal's.
CREATE DATABASE tpp_bank OWNER tpp;
