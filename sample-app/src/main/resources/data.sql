-- One product to try the API with; kept (not reset) when the database already has it.
INSERT INTO product (id, name, stock, fence_token)
SELECT 1, 'Flash-sale sneakers', 100, 0 WHERE NOT EXISTS (SELECT 1 FROM product WHERE id = 1);
